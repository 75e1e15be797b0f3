// What a view's frames may do, for both of them: the page's sandbox frame and the relay's inner frame (each must
// grant a feature for the view to have it). Kept here once; the relay's bundle imports it too (ext-apps has the
// same mapping in `buildAllowAttribute`, but importing app-bridge would put its schemas into the relay).

/** The frames' `sandbox` attribute, as ext-apps' basic-host sets it. */
export const VIEW_SANDBOX = "allow-scripts allow-same-origin allow-forms";

const FEATURES = { camera: "camera", microphone: "microphone", geolocation: "geolocation", clipboardWrite: "clipboard-write" };

/** The `allow` attribute for the permissions a view asked for (`_meta.ui.permissions`); unknown ones grant nothing. */
export function allowAttribute(permissions: { readonly [feature: string]: unknown } | undefined): string {
  return Object.entries(FEATURES)
    .filter(([asked]) => permissions?.[asked] !== undefined && permissions[asked] !== false)
    .map(([, feature]) => feature)
    .join("; ");
}
