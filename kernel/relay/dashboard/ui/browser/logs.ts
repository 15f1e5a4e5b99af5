// The live log viewer: lines arrive over Server-Sent Events and are kept in an array; the DOM
// holds only the lines in view (plus a small margin), absolutely placed inside a spacer as tall as
// all lines, so 100,000 lines scroll like 100. Each line links to itself (#L123); search walks
// the matches; "Follow" keeps the newest line in view while the run is going.
import { parseAnsi, plainText } from './ansi.ts';

interface Line {
  job: string;
  step: string;
  stream: string;
  text: string;
}

const MARGIN = 20;

export function startLogs(box: HTMLElement): void {
  const spacer = box.querySelector<HTMLElement>('#log-spacer')!;
  const state = document.getElementById('log-state')!;
  const search = document.getElementById('log-search') as HTMLInputElement;
  const count = document.getElementById('log-count')!;
  const follow = document.getElementById('log-follow') as HTMLInputElement;
  const lines: Line[] = [];
  let lineHeight = 0;
  let scheduled = false;
  let matches: number[] = [];
  let current = -1;
  let highlighted = -1;
  let rendered = { from: -1, to: -1, total: -1, highlighted: -1, match: '' };

  const measure = () => {
    const probe = document.createElement('div');
    probe.className = 'ln';
    probe.textContent = 'M';
    spacer.appendChild(probe);
    lineHeight = probe.getBoundingClientRect().height || 18;
    probe.remove();
  };

  const lineElement = (i: number): HTMLElement => {
    const line = lines[i]!;
    const row = document.createElement('div');
    row.className = line.stream === 'stderr' ? 'ln err' : 'ln';
    if (i === highlighted) row.classList.add('hl');
    row.style.top = `${i * lineHeight}px`;
    row.dataset['line'] = String(i + 1);
    const no = document.createElement('a');
    no.className = 'no';
    no.href = `#L${i + 1}`;
    no.textContent = String(i + 1);
    const where = document.createElement('span');
    where.className = 'where';
    where.textContent = line.job;
    where.title = `${line.job} › ${line.step}`;
    const text = document.createElement('span');
    text.className = 'tx';
    for (const seg of parseAnsi(line.text)) {
      if (seg.classes.length === 0) text.append(seg.text);
      else {
        const span = document.createElement('span');
        span.className = seg.classes.join(' ');
        span.textContent = seg.text;
        text.appendChild(span);
      }
    }
    row.append(no, where, text);
    return row;
  };

  const render = () => {
    scheduled = false;
    if (lineHeight === 0) measure();
    spacer.style.height = `${lines.length * lineHeight}px`;
    const from = Math.max(0, Math.floor(box.scrollTop / lineHeight) - MARGIN);
    const to = Math.min(lines.length, Math.ceil((box.scrollTop + box.clientHeight) / lineHeight) + MARGIN);
    const key = search.value;
    if (from === rendered.from && to === rendered.to && highlighted === rendered.highlighted && key === rendered.match && rendered.total === lines.length) return;
    const fragment = document.createDocumentFragment();
    for (let i = from; i < to; i++) fragment.appendChild(lineElement(i));
    spacer.replaceChildren(fragment);
    rendered = { from, to, total: lines.length, highlighted, match: key };
    box.dataset['lines'] = String(lines.length);
    box.dataset['rendered'] = String(to - from);
  };
  const schedule = () => {
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(render);
    }
  };

  const goTo = (index: number) => {
    if (lineHeight === 0) measure();
    highlighted = index;
    follow.checked = false;
    box.scrollTop = Math.max(0, index * lineHeight - box.clientHeight / 3);
    render();
  };

  const fromHash = () => {
    const m = /^#L(\d+)$/.exec(location.hash);
    if (m !== null) {
      const n = Number(m[1]) - 1;
      if (n >= 0 && n < lines.length) goTo(n);
      return n;
    }
    return -1;
  };
  let pendingHash = -1;
  // A step's link from the run page (?job=&step=) opens the log at that step's first line.
  const wanted = new URLSearchParams(location.search);
  let stepPending = wanted.has('step') && !location.hash.startsWith('#L');
  // A failed test's link from the Tests tab adds ?find=<test name>, a log search's link the
  // line's text: the step's first line holding it (else the step's first line). In a long log
  // that line may come in a later batch: the step is shown meanwhile, and each batch is looked
  // through once, until the line is found or the stream ends.
  let stepAt = -1;
  let scanned = 0;
  const jumpToStep = (ended: boolean) => {
    if (stepAt < 0) stepAt = lines.findIndex((l) => l.step === wanted.get('step') && (!wanted.has('job') || l.job === wanted.get('job')));
    if (stepAt < 0) return;
    const find = wanted.get('find') ?? '';
    const first = lines[stepAt]!;
    for (let i = Math.max(scanned, stepAt); find !== '' && i < lines.length; i++) {
      const l = lines[i]!;
      if (l.step === first.step && l.job === first.job && plainText(l.text).includes(find)) {
        stepPending = false;
        goTo(i);
        return;
      }
    }
    scanned = lines.length;
    if (find === '' || ended) {
      stepPending = false;
      goTo(stepAt);
    } else if (highlighted < 0) goTo(stepAt);
  };

  box.addEventListener('scroll', schedule, { passive: true });
  window.addEventListener('resize', schedule);
  window.addEventListener('hashchange', fromHash);

  const runSearch = () => {
    const needle = search.value.toLowerCase();
    matches = [];
    current = -1;
    if (needle !== '') for (let i = 0; i < lines.length; i++) if (plainText(lines[i]!.text).toLowerCase().includes(needle)) matches.push(i);
    count.textContent = needle === '' ? '' : `${matches.length} match${matches.length === 1 ? '' : 'es'}`;
    if (matches.length > 0) step(1);
  };
  const step = (delta: number) => {
    if (matches.length === 0) return;
    current = (current + delta + matches.length) % matches.length;
    count.textContent = `${current + 1} of ${matches.length}`;
    goTo(matches[current]!);
  };
  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  search.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 200);
  });
  search.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      step(e.shiftKey ? -1 : 1);
    }
  });
  document.getElementById('log-prev')!.addEventListener('click', () => step(-1));
  document.getElementById('log-next')!.addEventListener('click', () => step(1));

  const source = new EventSource(box.dataset['stream']!);
  state.textContent = 'Streaming…';
  let opened = 0;
  // A reconnect starts the stream over from the first line: start the view over too.
  source.onopen = () => {
    if (opened++ > 0) {
      lines.length = 0;
      stepAt = -1;
      scanned = 0;
    }
  };
  source.addEventListener('lines', (e) => {
    const batch = JSON.parse((e as MessageEvent<string>).data) as Array<[string, string, string, string]>;
    for (const [job, step, stream, text] of batch) lines.push({ job, step, stream, text });
    state.textContent = `${lines.length} lines, streaming…`;
    if (pendingHash === -1 && location.hash.startsWith('#L')) pendingHash = fromHash();
    else if (pendingHash >= 0 && pendingHash < lines.length && highlighted !== pendingHash) goTo(pendingHash);
    if (stepPending) jumpToStep(false);
    if (follow.checked) {
      if (lineHeight === 0) measure();
      spacer.style.height = `${lines.length * lineHeight}px`;
      box.scrollTop = box.scrollHeight;
    }
    schedule();
  });
  source.addEventListener('status', (e) => {
    const { status } = JSON.parse((e as MessageEvent<string>).data) as { status: string };
    box.dataset['status'] = status;
    const badge = document.querySelector('#log-status .status');
    if (badge !== null) {
      badge.className = `status s-${status.replace(/[^a-z_]/g, '')}`;
      badge.textContent = status;
    }
  });
  source.addEventListener('end', (e) => {
    const { status } = JSON.parse((e as MessageEvent<string>).data) as { status: string };
    source.close();
    box.dataset['done'] = 'yes';
    state.textContent = `${lines.length} lines; the run is ${status}.`;
    if (pendingHash >= 0) goTo(pendingHash);
    if (stepPending) jumpToStep(true);
    schedule();
  });
  source.addEventListener('problem', (e) => {
    state.textContent = `Waiting for the orchestrator: ${(JSON.parse((e as MessageEvent<string>).data) as { message: string }).message}`;
  });
  source.onerror = () => {
    if (box.dataset['done'] !== 'yes') state.textContent = `${lines.length} lines; reconnecting…`;
  };
}
