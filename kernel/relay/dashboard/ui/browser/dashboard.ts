// Progressive enhancement of the dashboard's server-rendered pages (loaded as one module script;
// the pages work without it): the runs list updates live over Server-Sent Events, a running run's
// page refreshes itself, action forms submit with fetch and show the answer in place (the re-run
// cooldown as a countdown), and the log page becomes the live, virtualised viewer.
import { startLogs } from './logs.ts';

function startRunsList(status: HTMLElement): void {
  const body = document.getElementById('runs-body');
  if (body === null) return;
  const source = new EventSource(status.dataset['stream']!);
  source.addEventListener('runs', (e) => {
    // Rows are rendered (and escaped) by the server, the same markup as the first page.
    const { html, count } = JSON.parse((e as MessageEvent<string>).data) as { html: string; count: number };
    const template = document.createElement('template');
    template.innerHTML = html;
    body.replaceChildren(template.content);
    document.getElementById('runs-empty')?.remove();
    status.textContent = `Updates live · ${count} run${count === 1 ? '' : 's'} · ${new Date().toLocaleTimeString()}`;
  });
  source.onerror = () => {
    status.textContent = 'Live updates paused; reconnecting…';
  };
}

/** A run that is not over re-reads its own page every few seconds and swaps the detail in. */
function startRunRefresh(detail: HTMLElement): void {
  if (detail.dataset['terminal'] === 'yes') return;
  const timer = setInterval(async () => {
    if (document.activeElement instanceof HTMLInputElement) return; // someone is typing a comment
    const response = await fetch(location.pathname, { headers: { accept: 'text/html' } }).catch(() => undefined);
    if (response === undefined || !response.ok) return;
    const next = new DOMParser().parseFromString(await response.text(), 'text/html').getElementById('run-detail');
    const now = document.getElementById('run-detail');
    if (next === null || now === null) return;
    now.replaceWith(next);
    enhanceActions(next);
    if (next.dataset['terminal'] === 'yes') clearInterval(timer);
  }, 2_000);
}

function countdown(button: HTMLButtonElement, seconds: number, flash: HTMLElement): void {
  const label = button.textContent ?? '';
  let left = seconds;
  button.disabled = true;
  const tick = () => {
    if (left <= 0) {
      clearInterval(timer);
      button.disabled = false;
      button.textContent = label;
      return;
    }
    button.textContent = `${label} (${left}s)`;
    left--;
  };
  const timer = setInterval(tick, 1_000);
  tick();
  flash.dataset['cooldown'] = String(seconds);
}

function enhanceActions(root: ParentNode): void {
  const csrf = document.body.dataset['csrf'] ?? '';
  for (const form of root.querySelectorAll<HTMLFormElement>('form[data-action]')) {
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const flash = document.getElementById('flash')!;
      const button = form.querySelector<HTMLButtonElement>('button')!;
      button.disabled = true;
      flash.className = 'flash';
      flash.textContent = 'Sending…';
      try {
        const response = await fetch(form.action, {
          method: 'POST',
          headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': csrf },
          body: new URLSearchParams(new FormData(form) as unknown as Record<string, string>).toString(),
        });
        const answer = (await response.json()) as { ok: boolean; message?: string; location?: string; error?: { message: string; code: string }; retryAfterSeconds?: number };
        if (answer.ok) {
          flash.textContent = answer.message ?? 'Done.';
          if (answer.location !== undefined && answer.location !== location.pathname) location.assign(answer.location);
          else setTimeout(() => location.reload(), 300);
          return;
        }
        flash.className = 'flash error';
        flash.textContent = `${answer.error?.message ?? 'Refused.'} (${answer.error?.code ?? response.status})`;
        const retry = answer.retryAfterSeconds ?? Number(response.headers.get('retry-after') ?? 0);
        if (response.status === 429 && retry > 0) return countdown(button, retry, flash);
      } catch (error) {
        flash.className = 'flash error';
        flash.textContent = `The relay did not answer: ${String(error)}`;
      }
      button.disabled = false;
    });
  }
}

function main(): void {
  const runs = document.getElementById('live-state');
  if (runs !== null) startRunsList(runs);
  const detail = document.getElementById('run-detail');
  if (detail !== null) {
    enhanceActions(detail);
    startRunRefresh(detail);
  }
  const log = document.getElementById('log');
  if (log !== null) startLogs(log);
}

main();
