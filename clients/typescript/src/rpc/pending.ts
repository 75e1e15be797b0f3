// Where a response is matched to its request: the ids this client allocates, the requests in flight under them, and
// the ids given up on (cancelled or timed out) whose late answers are dropped.

/** A request in flight. */
export interface PendingRequest {
  readonly id: number;
  readonly method: string;
  /** Settle it with the checked result. */
  resolve(result: unknown): void;
  /** Settle it with an error. */
  reject(error: Error): void;
}

/** What an incoming response's id refers to. */
export type Match =
  | { readonly kind: "pending"; readonly request: PendingRequest }
  /** A request the client gave up on: its answer is dropped. */
  | { readonly kind: "abandoned" }
  /** An id equal to a pending request's only as text (`"7"` for `7`): that request cannot be answered any more. */
  | { readonly kind: "mistyped"; readonly request: PendingRequest }
  | { readonly kind: "unknown" };

/** The requests in flight on one connection, by id. */
export class PendingRequests {
  private nextId = 1;
  private readonly inFlight = new Map<number, PendingRequest>();
  private readonly abandoned = new Set<number>();

  /** Allocate an id and record the request under it. */
  open(method: string, resolve: (result: unknown) => void, reject: (error: Error) => void): PendingRequest {
    const request: PendingRequest = { id: this.nextId++, method, resolve, reject };
    this.inFlight.set(request.id, request);
    return request;
  }

  /** Forget a settled request. */
  close(request: PendingRequest): void {
    this.inFlight.delete(request.id);
  }

  /** Forget a request given up on, keeping its id so that its answer, when it comes, is dropped. */
  abandon(request: PendingRequest): void {
    this.inFlight.delete(request.id);
    this.abandoned.add(request.id);
  }

  /** What the id of an incoming response refers to; a pending or abandoned match is taken off the table. */
  match(id: unknown): Match {
    if (typeof id === "number") {
      const request = this.inFlight.get(id);
      if (request !== undefined) {
        this.inFlight.delete(id);
        return { kind: "pending", request };
      }
      if (this.abandoned.delete(id)) return { kind: "abandoned" };
      return { kind: "unknown" };
    }
    if (typeof id === "string" && /^[1-9][0-9]*$/.test(id)) {
      const request = this.inFlight.get(Number(id));
      if (request !== undefined) {
        this.inFlight.delete(request.id);
        return { kind: "mistyped", request };
      }
    }
    return { kind: "unknown" };
  }

  /** Every request in flight, taken off the table (the connection ended). */
  drain(): PendingRequest[] {
    const requests = [...this.inFlight.values()];
    this.inFlight.clear();
    this.abandoned.clear();
    return requests;
  }
}
