/**
 * The errors `@downbeat/engine` throws. Each has its own class, so callers can tell them apart
 * with `instanceof` (or by `name`, across threads).
 *
 * @module
 */

/**
 * The engine refused something: a project that does not load (the message is the one
 * `downbeat run` prints for the same file), a MIDI file it cannot read, a node the browser cannot
 * run. `code` is the engine's (ABI.md): -2 bad input, -6 not supported in the browser, ...
 *
 * ```js
 * try {
 *   await DownbeatEngine.create(context, "edges = [");
 * } catch (e) {
 *   if (e instanceof EngineError) console.log(e.code, e.message); // -2 "project.toml:1:10: ..."
 * }
 * ```
 */
export class EngineError extends Error {
  /** The engine's error code (negative). */
  readonly code: number;

  constructor(code: number, message: string) {
    super(message);
    this.name = "EngineError";
    this.code = code;
  }
}

/**
 * The control ring had no room for the record: the worklet is not draining it (the context is
 * suspended or closed), or more was sent in one go than the ring holds. Nothing was written;
 * send it again later, or make the engine with a larger `controlCapacity`.
 */
export class ControlRingFull extends Error {
  constructor(what: string) {
    super(`the control ring is full: ${what} was not sent`);
    this.name = "ControlRingFull";
  }
}

/** A node, parameter or instrument name the loaded project does not have; lists the known ones. */
export class UnknownName extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnknownName";
  }
}
