// WCAG 2 contrast of a rendered dashboard page, measured in the browser: every visible element
// that draws text of its own (main text, links, status badges, buttons, table headers, form
// controls and their placeholders, log lines) against its effective background — the first
// opaque background among its ancestors (else the scheme's canvas) with the translucent ones
// between composited on top, and the element's own opacity (and its ancestors') applied to the
// text. Large text (24 px, or
// 18.66 px bold) needs 3:1, the rest 4.5:1 (WCAG 1.4.3). Disabled controls are exempt (WCAG
// "inactive user interface components"), as is text outside the page (the skip link until focused).
import type { Page } from 'playwright-core';

export interface ContrastSample {
  /** text, link, badge, button, th, control, placeholder */
  kind: string;
  /** A short description: tag, classes, and the start of the text. */
  where: string;
  ratio: number;
  required: number;
  fg: string;
  bg: string;
}

export interface ContrastReport {
  count: number;
  lowest: ContrastSample;
  failures: ContrastSample[];
}

/** The page's own globals, loosely typed: the test tree is type-checked without DOM types. */
type Element = any;
interface PageGlobals {
  document: any;
  getComputedStyle(element: Element, pseudo?: string): any;
  scrollY: number;
}

/** Runs in the page (serialized by playwright): no closure over anything outside it. */
function measure(): { count: number; samples: ContrastSample[] } {
  const { document, scrollY } = globalThis as unknown as PageGlobals;
  const getComputedStyle = (element: Element, pseudo?: string) => (globalThis as unknown as PageGlobals).getComputedStyle(element, pseudo);
  const TEXT_NODE = 3;
  type Rgba = [number, number, number, number];
  const parse = (text: string): Rgba => {
    const m = /rgba?\(([^)]+)\)/.exec(text);
    if (m === null) throw new Error(`unexpected colour ${text}`);
    const parts = m[1]!.split(/[\s,/]+/).filter((p) => p !== '').map(Number);
    return [parts[0]!, parts[1]!, parts[2]!, parts.length > 3 ? parts[3]! : 1];
  };
  const over = (top: Rgba, bottom: Rgba): Rgba => [0, 1, 2].map((i) => top[i]! * top[3] + bottom[i]! * (1 - top[3])).concat(1) as Rgba;
  const linear = (v: number) => (v / 255 <= 0.04045 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4);
  const luminance = (c: Rgba): number => 0.2126 * linear(c[0]) + 0.7152 * linear(c[1]) + 0.0722 * linear(c[2]);
  const ratioOf = (a: Rgba, b: Rgba): number => {
    const [l1, l2] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
    return (l1 + 0.05) / (l2 + 0.05);
  };
  const hex = (c: Rgba) => `#${c.slice(0, 3).map((v) => Math.round(v).toString(16).padStart(2, '0')).join('')}`;
  const probe = document.createElement('div');
  probe.style.backgroundColor = 'Canvas';
  document.documentElement.append(probe);
  const canvas = parse(getComputedStyle(probe).backgroundColor);
  probe.remove();
  const background = (el: Element): Rgba => {
    const layers: Rgba[] = [];
    for (let node: Element | null = el; node !== null; node = node.parentElement) {
      const bg = parse(getComputedStyle(node).backgroundColor);
      if (bg[3] > 0) layers.push(bg);
      if (bg[3] >= 1) break;
    }
    // Below everything: the canvas of the page's colour scheme (dark in a dark scheme).
    let base: Rgba = canvas;
    for (const layer of layers.reverse()) base = over(layer, base);
    return base;
  };
  const opacity = (el: Element): number => (el === null ? 1 : Number(getComputedStyle(el).opacity) * opacity(el.parentElement));
  const kindOf = (el: Element): string => {
    if (el.closest('.status') !== null) return 'badge';
    if (el.closest('button, .button') !== null) return 'button';
    if (el.closest('a') !== null) return 'link';
    if (el.closest('th') !== null) return 'th';
    if (el.matches('input, select, textarea')) return 'control';
    return 'text';
  };
  const samples: ContrastSample[] = [];
  const add = (el: Element, kind: string, colour: string, text: string) => {
    const style = getComputedStyle(el);
    const bg = background(el);
    const fg = over([...parse(colour).slice(0, 3), parse(colour)[3] * opacity(el)] as Rgba, bg);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    const cls = typeof el.className === 'string' && el.className !== '' ? `.${el.className.trim().split(/\s+/).join('.')}` : '';
    samples.push({ kind, where: `${el.tagName.toLowerCase()}${cls} "${text.trim().slice(0, 40)}"`, ratio: ratioOf(fg, bg), required: large ? 3 : 4.5, fg: hex(fg), bg: hex(bg) });
  };
  const visible = (el: Element): boolean => {
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.display === 'none') return false;
    const rect = el.getBoundingClientRect();
    if (rect.width < 2 || rect.height < 2 || rect.right <= 0 || rect.bottom <= -scrollY) return false;
    // Visually hidden (.sr): clipped to a pixel.
    return el.closest('.sr') === null;
  };
  for (const el of document.body.querySelectorAll('*') as Element[]) {
    if (['SCRIPT', 'STYLE', 'OPTION', 'NOSCRIPT', 'TEMPLATE'].includes(el.tagName) || !visible(el)) continue;
    if (el.closest(':disabled') !== null) continue;
    const own = [...el.childNodes].filter((n: any) => n.nodeType === TEXT_NODE).map((n: any) => n.textContent ?? '').join('');
    if (own.trim() !== '') add(el, kindOf(el), getComputedStyle(el).color, own);
    if (el.matches('input:not([type=checkbox]):not([type=hidden]), select, textarea')) {
      if (el.value !== '' || el.tagName === 'SELECT') add(el, 'control', getComputedStyle(el).color, el.value || 'select');
      if (el.placeholder !== undefined && el.placeholder !== '') add(el, 'placeholder', getComputedStyle(el, '::placeholder').color, el.placeholder);
    }
  }
  return { count: samples.length, samples };
}

export async function measureContrast(page: Page): Promise<ContrastReport> {
  const { count, samples } = await page.evaluate(measure);
  if (samples.length === 0) throw new Error('no text measured: the page drew nothing');
  const lowest = samples.reduce((low, s) => (s.ratio < low.ratio ? s : low));
  return { count, lowest, failures: samples.filter((s) => s.ratio < s.required) };
}

export function describeSample(s: ContrastSample): string {
  return `${s.ratio.toFixed(2)}:1 (needs ${s.required}:1) ${s.kind} ${s.where} ${s.fg} on ${s.bg}`;
}
