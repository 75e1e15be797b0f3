// Where a line is read: the JSON-lines framing of a byte stream, in time linear in its length and memory bounded by a
// cap, the way the daemon reads its own stdin (app_server/lines.py).

/** A line a reader dropped instead of handing it over. */
export interface DroppedLine {
  /** `tooLong`: longer than the cap (its bytes were dropped as they arrived); `notUtf8`: not valid UTF-8. */
  readonly problem: "tooLong" | "notUtf8";
  /** The line's first bytes (at most `HEAD_BYTES`), decoded leniently: enough to tell which request it answers. */
  readonly head: string;
  /** The cap the reader applies, in bytes. */
  readonly maxBytes: number;
}

/** Where a reader hands each line over, in the order they arrived. */
export interface LineSink {
  /** One complete line, decoded, without its newline. */
  line(text: string): void;
  /** A line that was dropped. */
  dropped(line: DroppedLine): void;
}

/** How much of a dropped line is kept to describe it. */
export const HEAD_BYTES = 256;

const NEWLINE = 0x0a;
const encoder = new TextEncoder();
const strict = new TextDecoder("utf-8", { fatal: true });
const lenient = new TextDecoder("utf-8");

/**
 * Splits a byte (or text) stream into `\n`-terminated lines, without the newline (and a `\r` before it). Each chunk is
 * searched once for newlines and each line joined once, so reading costs time linear in the input; a line longer
 * than `maxBytes` is dropped as it arrives (only its first bytes are kept, to describe it) and reading resumes after
 * its newline. Empty lines are skipped; an unfinished line left when the stream ends is never handed over.
 */
export class LineReader {
  private parts: Uint8Array[] = [];
  private size = 0;
  private skipping = false;

  constructor(
    private readonly maxBytes: number,
    private readonly sink: LineSink,
  ) {}

  /** The bytes held for the unfinished line (never more than the cap). */
  get bufferedBytes(): number {
    return this.size;
  }

  /** Read a chunk: every line it ends goes to the sink. */
  push(chunk: string | Uint8Array): void {
    const bytes = typeof chunk === "string" ? encoder.encode(chunk) : chunk;
    let start = 0;
    for (let end = bytes.indexOf(NEWLINE, start); end >= 0; end = bytes.indexOf(NEWLINE, start)) {
      this.keep(bytes.subarray(start, end));
      const line = this.skipping || this.size === 0 ? undefined : this.take();
      this.parts = [];
      this.size = 0;
      this.skipping = false;
      start = end + 1;
      if (line !== undefined && line !== "") this.sink.line(line);
    }
    this.keep(bytes.subarray(start));
  }

  private keep(piece: Uint8Array): void {
    if (this.skipping || piece.length === 0) return;
    if (this.size + piece.length <= this.maxBytes) {
      this.parts.push(piece);
      this.size += piece.length;
      return;
    }
    const head = this.join([...this.parts, piece.subarray(0, HEAD_BYTES)], HEAD_BYTES);
    this.parts = [];
    this.size = 0;
    this.skipping = true;
    this.sink.dropped({ problem: "tooLong", head: lenient.decode(head), maxBytes: this.maxBytes });
  }

  private take(): string | undefined {
    const bytes = this.join(this.parts, this.size);
    let line: string;
    try {
      line = strict.decode(bytes);
    } catch {
      this.sink.dropped({
        problem: "notUtf8",
        head: lenient.decode(bytes.subarray(0, HEAD_BYTES)),
        maxBytes: this.maxBytes,
      });
      return undefined;
    }
    return line.endsWith("\r") ? line.slice(0, -1) : line;
  }

  /** The first `limit` bytes of `parts`, as one array (the part itself when there is one). */
  private join(parts: readonly Uint8Array[], limit: number): Uint8Array {
    const first = parts[0];
    if (parts.length === 1 && first !== undefined && first.length <= limit) return first;
    const total = Math.min(
      limit,
      parts.reduce((sum, part) => sum + part.length, 0),
    );
    const joined = new Uint8Array(total);
    let offset = 0;
    for (const part of parts) {
      if (offset >= total) break;
      const piece = part.subarray(0, total - offset);
      joined.set(piece, offset);
      offset += piece.length;
    }
    return joined;
  }
}
