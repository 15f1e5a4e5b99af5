// ANSI SGR colours of a log line as classes: the text goes into the DOM only through
// textContent, so nothing in a line can become markup; escape sequences other than SGR are dropped.
export interface Segment {
  text: string;
  classes: string[];
}

// CSI: ESC [ params final-byte. OSC and other escapes are removed as well.
const ESCAPE = /\x1b\[([0-9;:?]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

interface State {
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
  fg: string | undefined;
  bg: string | undefined;
}

function classesOf(s: State): string[] {
  const out: string[] = [];
  if (s.bold) out.push('a-b');
  if (s.dim) out.push('a-d');
  if (s.italic) out.push('a-i');
  if (s.underline) out.push('a-u');
  if (s.fg !== undefined) out.push(`a-f${s.fg}`);
  if (s.bg !== undefined) out.push(`a-g${s.bg}`);
  return out;
}

function applySgr(s: State, params: string): void {
  const codes = params === '' ? [0] : params.split(/[;:]/).map((p) => (p === '' ? 0 : Number(p)));
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i]!;
    if (c === 0) Object.assign(s, { bold: false, dim: false, italic: false, underline: false, fg: undefined, bg: undefined });
    else if (c === 1) s.bold = true;
    else if (c === 2) s.dim = true;
    else if (c === 3) s.italic = true;
    else if (c === 4) s.underline = true;
    else if (c === 22) s.bold = s.dim = false;
    else if (c === 23) s.italic = false;
    else if (c === 24) s.underline = false;
    else if (c >= 30 && c <= 37) s.fg = String(c - 30);
    else if (c >= 90 && c <= 97) s.fg = String(c - 90 + 8);
    else if (c === 39) s.fg = undefined;
    else if (c >= 40 && c <= 47) s.bg = String(c - 40);
    else if (c >= 100 && c <= 107) s.bg = String(c - 100 + 8);
    else if (c === 49) s.bg = undefined;
    else if (c === 38 || c === 48) {
      // 256-colour (5;n) maps its first 16 onto the palette; true colour (2;r;g;b) is skipped.
      const mode = codes[i + 1];
      if (mode === 5) {
        const n = codes[i + 2] ?? 0;
        if (n < 16) {
          if (c === 38) s.fg = String(n);
          else s.bg = String(n);
        }
        i += 2;
      } else if (mode === 2) i += 4;
    }
  }
}

export function parseAnsi(line: string): Segment[] {
  if (!line.includes('\x1b')) return [{ text: line, classes: [] }];
  const state: State = { bold: false, dim: false, italic: false, underline: false, fg: undefined, bg: undefined };
  const out: Segment[] = [];
  let last = 0;
  for (const m of line.matchAll(ESCAPE)) {
    if (m.index > last) out.push({ text: line.slice(last, m.index), classes: classesOf(state) });
    if (m[2] === 'm') applySgr(state, m[1] ?? '');
    last = m.index + m[0].length;
  }
  if (last < line.length) out.push({ text: line.slice(last), classes: classesOf(state) });
  return out;
}

/** The text without escapes: what search looks in. */
export function plainText(line: string): string {
  return line.includes('\x1b') ? line.replace(ESCAPE, '') : line;
}
