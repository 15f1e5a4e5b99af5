// Glob pattern lists (branches, tags, paths, status contexts, repositories) and commit-message
// filters, compiled once and cached by their text. The cache key is the pattern text, never the
// lock's self-declared contentHash: two locks that claim the same hash can never share a
// matcher they did not write.
import picomatch from 'picomatch';
import { LRUCache } from 'lru-cache';
import type { LockCommitMessage } from '../../schemas/lock.ts';

/**
 * - `ref`: branch names, tag names, status contexts. `*` stops at `/` (`release/*` matches
 *   `release/1.2`, not `release/1.2/hotfix`); `**` crosses it.
 * - `path`: repository-relative file paths, same rules; dot files are matched like any file.
 * - `repository`: `owner/repo`, case-insensitive like the forges themselves.
 */
export type PatternKind = 'ref' | 'path' | 'repository';

const PICOMATCH_OPTIONS: Record<PatternKind, picomatch.PicomatchOptions> = {
  ref: { dot: true, windows: false },
  path: { dot: true, windows: false },
  repository: { dot: true, nocase: true, windows: false },
};

type Test = (value: string) => boolean;

export interface PatternEntry {
  readonly pattern: string;
  readonly negated: boolean;
  readonly test: Test;
}

export interface PatternList {
  readonly patterns: readonly string[];
  /** `["main", "release/*"]`, for verdict details. */
  readonly shown: string;
  readonly entries: readonly PatternEntry[];
  readonly onlyNegations: boolean;
  /** Set when a pattern cannot be compiled; every selection is then indeterminate. */
  readonly error: string | null;
}

export interface Selection {
  readonly selected: boolean;
  /** The pattern that decided, or `null` when none matched. */
  readonly by: string | null;
}

// Bounded: lock contents come from repositories, so the set of pattern texts is unbounded.
const lists = new LRUCache<string, PatternList>({ max: 20_000 });
const messages = new LRUCache<string, MessageMatcher>({ max: 5_000 });

// Characters JSON.stringify would escape; most values have none, and quoting is on the hot path.
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** `"value"`, escaped like JSON. */
export function quote(value: string): string {
  return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
}

export function showList(values: readonly string[]): string {
  return `[${values.map(quote).join(', ')}]`;
}

/** Compile (or fetch from the cache) a declared-order pattern list. */
export function compilePatternList(kind: PatternKind, patterns: readonly string[]): PatternList {
  const key = `${kind}\u0000${patterns.join('\u0001')}`;
  const cached = lists.get(key);
  if (cached) return cached;
  const entries: PatternEntry[] = [];
  let error: string | null = null;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    const body = negated ? pattern.slice(1) : pattern;
    try {
      entries.push({ pattern, negated, test: picomatch(body, PICOMATCH_OPTIONS[kind]) });
    } catch (cause) {
      error = `pattern ${quote(pattern)} is not a valid glob: ${(cause as Error).message}`;
      break;
    }
  }
  const list: PatternList = {
    patterns: [...patterns],
    shown: showList(patterns),
    entries,
    onlyNegations: patterns.length > 0 && patterns.every((p) => p.startsWith('!')),
    error,
  };
  lists.set(key, list);
  return list;
}

/**
 * Whether a value is selected by a pattern list.
 *
 * Rule: patterns are read in declared order and the LAST pattern that matches the value
 * decides: a plain pattern selects it, a `!pattern` excludes it. When no pattern matches, the
 * value is excluded, except for a list made only of negations, which means "everything except":
 * `["!docs/**"]` selects every value the negations do not match. An empty list is no filter at
 * all (callers treat it as a pass before asking).
 */
export function select(list: PatternList, value: string): Selection {
  const { entries } = list;
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!;
    if (entry.test(value)) return { selected: !entry.negated, by: entry.pattern };
  }
  return { selected: list.onlyNegations, by: null };
}

/** `branch "main" matches "main"`, `branch "feature/x" matches none of ["main", "release/*"]`, … */
export function describeSelection(label: string, value: string, list: PatternList, selection: Selection): string {
  const subject = `${label} ${quote(value)}`;
  if (selection.selected) {
    return selection.by === null ? `${subject} is not excluded by ${list.shown}` : `${subject} matches ${quote(selection.by)}`;
  }
  if (selection.by !== null) return `${subject} is excluded by ${quote(selection.by)} in ${list.shown}`;
  return `${subject} matches none of ${list.shown}`;
}

/** A regular-expression commit-message filter, as a caller evaluates it off the event loop. */
export interface MessageRegex {
  /** The key of its outcome in `MatchOptions.regexResults`. */
  readonly key: string;
  readonly source: string;
  readonly flags: string;
  /** `/source/flags`, for verdict details. */
  readonly shown: string;
}

export type MessageMatcher =
  | { readonly ok: true; readonly test: Test; readonly shown: string; readonly regex?: MessageRegex }
  | { readonly ok: false; readonly error: string; readonly shown: string };

// `/` has no meaning in a commit message; picomatch gives it path semantics (`*` stops there,
// `..` segments never match). Swapping it for a private-use character on both sides removes
// those semantics without touching the rest of the glob syntax.
const SLASH = '\uE000';

/** The key of a regular expression's outcome in `MatchOptions.regexResults`. */
export function messageRegexKey(source: string, flags: string): string {
  return `r\u0000${flags}\u0000${source}`;
}

/**
 * A commit-message filter → a test of the message.
 *
 * - `glob`: matched against the WHOLE message (every line), anchored at both ends. `*` and `?`
 *   cross `/` and line breaks, brackets are literal (`*[skip ci]*` finds the text `[skip ci]`
 *   anywhere), braces expand; write `*text*` to find text anywhere, `release:*` for a prefix.
 *   Case-sensitive.
 * - `regex`: `new RegExp(source, flags).test(message)`, an unanchored search over the whole
 *   message. An invalid expression is reported, never thrown. `test` runs it on the calling
 *   thread with no time bound (fine for `svc preview` on a developer's own machine); a server
 *   evaluates `regex` off its event loop instead and passes the outcome in `regexResults`.
 */
export function compileCommitMessage(filter: LockCommitMessage): MessageMatcher {
  const key = filter.kind === 'glob' ? `g\u0000${filter.pattern}` : messageRegexKey(filter.source, filter.flags);
  const cached = messages.get(key);
  if (cached) return cached;
  let matcher: MessageMatcher;
  if (filter.kind === 'glob') {
    const shown = `glob ${quote(filter.pattern)}`;
    try {
      const test = picomatch(filter.pattern.replaceAll('/', SLASH), { dot: true, literalBrackets: true, windows: false });
      matcher = { ok: true, shown, test: (message) => test(message.replaceAll('/', SLASH)) };
    } catch (cause) {
      matcher = { ok: false, shown, error: `glob ${quote(filter.pattern)} is not valid: ${(cause as Error).message}` };
    }
  } else {
    const shown = `/${filter.source}/${filter.flags}`;
    try {
      const re = new RegExp(filter.source, filter.flags);
      matcher = {
        ok: true,
        shown,
        regex: { key, source: filter.source, flags: filter.flags, shown },
        test: (message) => {
          // Harmless for the schema's flags (i, m, s, u); keeps a hand-made `g`/`y` stateless.
          re.lastIndex = 0;
          return re.test(message);
        },
      };
    } catch (cause) {
      matcher = { ok: false, shown, error: `regular expression ${shown} is not valid: ${(cause as Error).message}` };
    }
  }
  messages.set(key, matcher);
  return matcher;
}
