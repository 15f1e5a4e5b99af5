// The shape of the error-code catalogue (core/error-codes.ts). Kept apart from core/errors.ts so
// the catalogue files and the error classes can both import it without a cycle.

/** What an error means, independent of transport; each transport maps kinds in one place. */
export type ErrorKind =
  | 'input'
  | 'authentication'
  | 'not_allowed'
  | 'not_found'
  | 'conflict'
  | 'rate_limited'
  | 'unavailable'
  | 'internal';

export interface ErrorCodeEntry {
  /** The kind every throw of this code uses (the class: InputError is `input`, and so on). */
  readonly kind: ErrorKind;
  /** The condition in words; `{name}` placeholders stand for what the real message fills in. */
  readonly message: string;
}

/**
 * Codes to entries. A key is a full code (`SVC_ERR_<AREA>_<WHAT>`), or a family whose last part
 * is a `{number}`-valued placeholder (`SVC_ERR_CLI_PLATFORM_HTTP_{status}`).
 */
export type ErrorCatalogue = Readonly<Record<string, ErrorCodeEntry>>;

/** `SVC_ERR_X_{status}` → `SVC_ERR_X_${number}`; a plain code stays itself. */
export type ExpandCode<K> = K extends `${infer Head}{${string}}` ? `${Head}${number}` : K;
