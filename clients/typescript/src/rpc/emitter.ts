// The one listener set of the package: the client's own events and the daemon's notifications both go through it.

/** Listeners by event name, typed by what each event carries; a listener that throws is reported, never rethrown. */
export class Emitter<Events extends object> {
  private readonly listeners = new Map<keyof Events, Set<(payload: never) => void>>();

  /** `report` gets what a listener threw, with the event it was given. */
  constructor(private readonly report: (error: Error, event: keyof Events) => void) {}

  /** Call `listener` with each `event` from now on; returns the function that stops it. */
  on<E extends keyof Events>(event: E, listener: (payload: Events[E]) => void): () => void {
    let set = this.listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(event, set);
    }
    const stored = listener as (payload: never) => void;
    set.add(stored);
    return () => {
      this.listeners.get(event)?.delete(stored);
    };
  }

  /** Give `payload` to every listener of `event` (those added while it runs wait for the next one). */
  emit<E extends keyof Events>(event: E, payload: Events[E]): void {
    for (const listener of [...(this.listeners.get(event) ?? [])]) {
      try {
        (listener as (payload: Events[E]) => void)(payload);
      } catch (error) {
        this.report(error instanceof Error ? error : new Error(String(error)), event);
      }
    }
  }

  /** Remove every listener. */
  clear(): void {
    this.listeners.clear();
  }
}
