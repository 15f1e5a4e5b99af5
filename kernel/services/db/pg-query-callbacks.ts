// pg's `client.query(text, values)` without a callback builds its promise by assigning the query's
// callback from inside the Promise executor (`query.callback = (err, res) => …resolve(res)`). With
// that shape, V8 (Node 24) kept every query's objects (its text, values, parsed rows, the Query and
// its promise) alive through two young-generation collections, so all of them were promoted to the
// old generation and lived on as garbage until the next full collection. Measured with
// `--trace-gc-nvp` at 200 queries/s of 2 KB: 1.07 MB/s promoted through the promise API, 0.00 MB/s
// through pg's callback API with the promise made around it. In the orchestrator at 200
// webhooks/s the database path promoted ~3 MB/s, a full mark-compact every few seconds whose
// pauses and marking took the CPU from every delivery in flight (issue 19, docs/benchmarks.md).
//
// `queryThroughCallbacks()` makes `Client.prototype.query` without a callback go through the
// callback API and a promise created around it: same arguments, same results, the same errors
// (their stack re-captured on the awaiting side, as pg does). slonik's pg driver creates its own
// `pg.Client`s and awaits `client.query(…)`, so this is the one place all of them pass through.
// Calls with a callback or a submittable (cursors, streams) are left to pg as they were.
import pg from 'pg';

type Settle = (error: Error | null, result?: unknown) => void;
type Query = (this: pg.Client, config: unknown, values?: unknown, callback?: unknown) => unknown;

const PATCHED = Symbol.for('svc.pg.queryThroughCallbacks');

/**
 * Whether pg itself must handle this call: a callback given (as an argument or on the config
 * object), a submittable, or no query at all.
 */
function passThrough(config: unknown, values: unknown, callback: unknown): boolean {
  if (config === null || config === undefined) return true;
  const fields = config as { submit?: unknown; callback?: unknown };
  if (typeof fields.submit === 'function' || typeof fields.callback === 'function') return true;
  return typeof values === 'function' || typeof callback === 'function';
}

/** Installs the callback-based `query` on pg's Client (once per process; idempotent). */
export function queryThroughCallbacks(): void {
  const prototype = pg.Client.prototype as unknown as { query: Query; [PATCHED]?: true };
  if (prototype[PATCHED] === true) return;
  const original = prototype.query;
  prototype.query = function query(this: pg.Client, config: unknown, values?: unknown, callback?: unknown): unknown {
    if (passThrough(config, values, callback)) return original.call(this, config, values, callback);
    // The settling function is made in the executor but stored on the query outside it.
    let settle: Settle | undefined;
    const promise = new Promise<unknown>((resolve, reject) => {
      settle = (error, result) => (error ? reject(error) : resolve(result));
    });
    original.call(this, config, values, settle);
    return promise.catch((error: unknown) => {
      // As pg does: a stack that leads back to the caller, not to the socket's read.
      if (error instanceof Error) Error.captureStackTrace(error);
      throw error;
    });
  };
  prototype[PATCHED] = true;
}
