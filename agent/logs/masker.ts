// Secret masking for everything the agent forwards as a log line. The set of values grows
// during a job (dispatch secrets first, then secret outputs and minted tokens the runner
// reports). Each output stream is masked as one continuous text (lines joined with "\n"), so a
// secret split across two writes, two chunks or two lines is still found: a stream holds back
// its tail while that tail could be the start of a secret, and releases it once the next text
// rules the secret out (or when the stream is flushed).
//
// Forms masked for each value: the value itself; each line of a multi-line value (PEM keys are
// often printed line by line); the JSON-escaped form of each of those (a value with quotes,
// backslashes, tabs, newlines or control characters printed through JSON.stringify or a JSON log
// line no longer holds its plain text, yet is the same secret); its standard and URL-safe base64;
// its URL (percent) encoding.
// Values shorter than MIN_MASKED_LENGTH are not masked: masking "1" or "on" would shred every
// log line while protecting nothing; the job log gets a system line saying so.
export const MASK = '***';
export const MIN_MASKED_LENGTH = 4;

export class SecretSet {
  #values = new Set<string>();
  #sorted: string[] = [];
  #skipped: string[] = [];

  /** Adds a secret and its encoded forms; returns false when the value is too short to mask. */
  add(value: string): boolean {
    if (value.length < MIN_MASKED_LENGTH) {
      if (value.length > 0) this.#skipped.push(value);
      return false;
    }
    const forms = new Set<string>([value]);
    if (value.includes('\n')) {
      for (const line of value.split(/\r?\n/)) {
        const trimmed = line.trim();
        if (trimmed.length >= MIN_MASKED_LENGTH) forms.add(trimmed);
      }
    }
    for (const form of [...forms]) forms.add(JSON.stringify(form).slice(1, -1));
    const bytes = Buffer.from(value, 'utf8');
    forms.add(bytes.toString('base64'));
    forms.add(bytes.toString('base64url'));
    forms.add(encodeURIComponent(value));
    let changed = false;
    for (const form of forms) {
      if (form.length >= MIN_MASKED_LENGTH && !this.#values.has(form)) {
        this.#values.add(form);
        changed = true;
      }
    }
    // Longest first: a value containing another is replaced whole.
    if (changed) this.#sorted = [...this.#values].sort((a, b) => b.length - a.length);
    return true;
  }

  get values(): readonly string[] {
    return this.#sorted;
  }

  get longest(): number {
    return this.#sorted[0]?.length ?? 0;
  }

  /** Values refused as too short (for the job's system line; never logged by the agent). */
  get skippedCount(): number {
    return this.#skipped.length;
  }

  /** Every occurrence replaced; no carry-over (whole, final text). */
  mask(text: string): string {
    return maskText(text, this.#sorted);
  }
}

/**
 * A JSON-like value with every string (object keys included) masked: for data that leaves the
 * job as data rather than as a log line (job outputs, emitted event payloads). Like the forge
 * CIs, a released secret is never handed on in plain form; a job that must pass one on names the
 * context in the next job instead.
 */
export function maskDeep(value: unknown, secrets: SecretSet): unknown {
  if (secrets.values.length === 0) return value;
  if (typeof value === 'string') return secrets.mask(value);
  if (Array.isArray(value)) return value.map((v) => maskDeep(v, secrets));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [secrets.mask(k), maskDeep(v, secrets)]));
  }
  return value;
}

interface Match {
  start: number;
  end: number;
}

/** Leftmost, then longest, non-overlapping occurrences of any value. */
function findMatches(text: string, values: readonly string[]): Match[] {
  const matches: Match[] = [];
  if (values.length === 0) return matches;
  let i = 0;
  while (i < text.length) {
    let matched = 0;
    for (const value of values) {
      if (value.length <= text.length - i && text.startsWith(value, i)) {
        matched = value.length;
        break;
      }
    }
    if (matched > 0) {
      matches.push({ start: i, end: i + matched });
      i += matched;
    } else {
      i++;
    }
  }
  return matches;
}

function render(text: string, matches: readonly Match[], until: number): string {
  let out = '';
  let copied = 0;
  for (const m of matches) {
    if (m.end > until) break;
    out += text.slice(copied, m.start) + MASK;
    copied = m.end;
  }
  return out + text.slice(copied, until);
}

function maskText(text: string, values: readonly string[]): string {
  return render(text, findMatches(text, values), text.length);
}

/** Length of the longest suffix of `text` starting at or after `from` that is a proper prefix of a value. */
function heldSuffixLength(text: string, from: number, values: readonly string[]): number {
  let best = 0;
  for (const value of values) {
    const max = Math.min(value.length - 1, text.length - from);
    for (let k = max; k > best; k--) {
      if (text.endsWith(value.slice(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

/** One output stream: push text as it comes, get back text that is safe to forward. */
export class StreamMasker {
  readonly #secrets: SecretSet;
  #held = '';

  constructor(secrets: SecretSet) {
    this.#secrets = secrets;
  }

  /** Text safe to forward now; a tail that might begin a secret is kept for the next push. */
  push(text: string): string {
    const values = this.#secrets.values;
    const input = this.#held + text;
    this.#held = '';
    if (values.length === 0) return input;
    const matches = findMatches(input, values);
    // Hold back the longest tail that could still grow into a secret. A complete match that
    // straddles the cut is released whole (masked) and the hold is looked for after it.
    let cut = input.length - heldSuffixLength(input, 0, values);
    for (;;) {
      const straddling = matches.find((m) => m.start < cut && m.end > cut);
      if (straddling === undefined) break;
      cut = input.length - heldSuffixLength(input, straddling.end, values);
      if (cut < straddling.end) cut = straddling.end;
    }
    this.#held = input.slice(cut);
    return render(input, matches, cut);
  }

  /** Everything held, masked (end of stream or the hold waited long enough). */
  flush(): string {
    const rest = this.#held;
    this.#held = '';
    return this.#secrets.mask(rest);
  }

  get holding(): boolean {
    return this.#held.length > 0;
  }
}
