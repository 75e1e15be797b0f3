// The page's tabs, listed once: each tab's id, its label, and how its view is made. The layout (`main.ts`) builds the
// tab list, the panels and the banners from this table alone.
import { ActivityView } from "./activity.js";
import type { PageState } from "./state.js";
import type { Banner } from "./banner.js";
import { BrowseView } from "./browse.js";
import type { EventHub } from "./hub.js";
import { PromptsView } from "./prompts.js";
import { ResourcesView } from "./resources.js";
import { ServersView } from "./servers.js";
import { ThreadView } from "./thread.js";
import { ToolsView } from "./tools.js";

/** What a view is given: the page state, the event hub, and its own tab's banner. */
export interface ViewContext {
  readonly app: PageState;
  readonly hub: EventHub;
  readonly banner: Banner;
}

/** A tab's content. */
export interface View {
  readonly element: HTMLElement;
  /** Called each time its tab is shown. */
  shown?(): void;
}

interface TabSpec {
  readonly id: string;
  readonly label: string;
  readonly create: (context: ViewContext) => View;
}

export const TABS = [
  { id: "servers", label: "Servers", create: (context) => new ServersView(context) },
  { id: "browse", label: "Browse", create: (context) => new BrowseView(context) },
  { id: "tools", label: "Tools", create: (context) => new ToolsView(context) },
  { id: "prompts", label: "Prompts", create: (context) => new PromptsView(context) },
  { id: "resources", label: "Resources", create: (context) => new ResourcesView(context) },
  { id: "thread", label: "Thread", create: (context) => new ThreadView(context) },
  { id: "activity", label: "Activity", create: (context) => new ActivityView(context) },
] as const satisfies readonly TabSpec[];

export type TabId = (typeof TABS)[number]["id"];
