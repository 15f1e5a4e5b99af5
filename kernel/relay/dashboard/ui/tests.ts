// The dashboard's test pages (docs/test-results.md), each relayed as one `tests.request`:
//   GET  /ui/orgs/:orgId/runs/:runId/tests  → the run's Tests tab: counts, the steps that reported,
//                                             failures first (message, output, link to the step's log)
//   GET  /ui/orgs/:orgId/tests              → flaky tests (with the runs as evidence), quarantine list
//   GET  /ui/orgs/:orgId/tests/history?name=&suite=&repository= → one test's history with its sparkline
//   POST /ui/orgs/:orgId/tests/quarantine   → add or remove (form: action, repository, suite, name, reason), 303 back
// The sparkline is inline SVG (one bar per result, oldest left; its height is the duration, its
// colour the status): no script, and the CSP's default-src 'self' holds.
import type { FastifyRequest } from 'fastify';
import type { FlakyView, QuarantineView, RunTestsView, TestHistoryView, TestResultView } from '../../../../schemas/wire/relay.ts';
import { InputError, UnavailableError } from '../../../../core/errors.ts';
import type { SvcHttpServer } from '../../../services/http/index.ts';
import { formField, html, type Html } from '../../sessions/index.ts';
import { askTests } from '../test-routes.ts';
import { runIdOf, uiCaller, uiFailed, type UiOptions } from './common.ts';
import { csrfField, duration, sendUiPage, statusBadge, type Frame } from './frame.ts';
import { runsBase } from './pages.ts';

const enc = encodeURIComponent;
const testsBase = (orgId: string) => `/ui/orgs/${enc(orgId)}/tests`;

function historyHref(orgId: string, t: { repository?: string | null; suite: string; name: string }): string {
  const repo = t.repository === undefined || t.repository === null ? '' : `&repository=${enc(t.repository)}`;
  return `${testsBase(orgId)}/history?name=${enc(t.name)}&suite=${enc(t.suite)}${repo}`;
}

function testTitle(t: { suite: string; name: string }): string {
  return t.suite === '' ? t.name : `${t.suite} › ${t.name}`;
}

function resultRow(frame: Frame, r: TestResultView): Html {
  const logs = `${runsBase(frame.orgId)}/${enc(r.runId)}/logs?job=${enc(r.jobName)}&step=${enc(r.stepName)}&find=${enc(r.name)}`;
  const failing = r.status === 'failed' || r.status === 'errored';
  return html`<tr data-test="${testTitle(r)}" data-status="${r.status}"${failing ? html` class="failing"` : html``}>
<td>${statusBadge(r.status)}${r.quarantined ? html` <span class="status s-quarantined" title="quarantined: this failure did not fail its job">quarantined</span>` : html``}</td>
<td><a href="${historyHref(frame.orgId, r)}">${testTitle(r)}</a>${r.file === null ? html`` : html`<div class="note mono">${r.file}</div>`}</td>
<td>${r.jobName}${r.attempt > 1 ? html` <span class="note">(attempt ${r.attempt})</span>` : html``}</td>
<td>${duration(r.durationMs)}</td>
<td>${
    failing
      ? html`<div class="test-message">${r.message ?? ''}</div>${r.output === null ? html`` : html`<details><summary>output</summary><pre class="log">${r.output}</pre></details>`} <a href="${logs}">log of ${r.stepName}</a>`
      : html``
  }</td></tr>`;
}

export function runTestsPage(frame: Frame, run: RunTestsView): Html {
  const c = run.counts;
  const base = `${runsBase(frame.orgId)}/${enc(run.runId)}`;
  return html`<div id="run-tests" data-run="${run.runId}" data-total="${c.total}" data-failed="${c.failed + c.errored}">
<p class="crumbs"><a href="${runsBase(frame.orgId)}">Runs</a> › <a href="${base}">${run.runId.slice(0, 8)}</a> › Tests</p>
<h1>Tests</h1>
<p id="test-counts"><strong>${c.total}</strong> tests: ${c.passed} passed, ${c.failed} failed, ${c.errored} errored, ${c.skipped} skipped${c.quarantined > 0 ? html`; ${c.quarantined} failure(s) quarantined` : html``}.</p>
${
  run.steps.length === 0
    ? html`<p class="note">No step of this run reported test results.</p>`
    : html`<div class="table-wrap"><table id="test-steps"><thead><tr><th scope="col">Job</th><th scope="col">Step</th><th scope="col">Tests</th><th scope="col">Failed</th><th scope="col">Outcome</th></tr></thead><tbody>${run.steps.map(
        (s) => html`<tr><td>${s.jobName}${s.attempt > 1 ? html` (attempt ${s.attempt})` : html``}</td><td>${s.stepName}</td><td>${s.counts.total}</td><td>${s.counts.failed + s.counts.errored}</td><td>${
          s.waived ? html`failed only in quarantined tests: did not fail the job` : s.failedByTests ? html`failed by its tests` : s.exitFailure ? html`failed` : html`ok`
        }${s.problems.length > 0 ? html`<ul class="note">${s.problems.map((p) => html`<li>${p}</li>`)}</ul>` : html``}</td></tr>`,
      )}</tbody></table></div>`
}
${
  run.results.length === 0
    ? html``
    : html`<div class="table-wrap"><table id="test-results"><thead><tr><th scope="col">Status</th><th scope="col">Test</th><th scope="col">Job</th><th scope="col">Duration</th><th scope="col">Failure</th></tr></thead><tbody>${run.results.map((r) => resultRow(frame, r))}</tbody></table></div>`
}
${run.omitted > 0 ? html`<p class="note" id="tests-omitted">${run.omitted} more passed or skipped tests are not listed.</p>` : html``}
</div>`;
}

/** One bar per result, oldest left: height = duration against the slowest, colour = status. */
export function sparkline(results: TestHistoryView['results']): Html {
  const shown = [...results].reverse();
  const width = Math.max(1, shown.length) * 6;
  const max = Math.max(1, ...shown.map((r) => r.durationMs ?? 0));
  const colour: Record<string, string> = { passed: '#2e7d32', failed: '#c62828', errored: '#8e24aa', skipped: '#9e9e9e' };
  const bars = shown.map((r, i) => {
    const h = Math.max(3, Math.round(((r.durationMs ?? 0) / max) * 36));
    return html`<rect x="${i * 6}" y="${40 - h}" width="5" height="${h}" fill="${colour[r.status] ?? '#9e9e9e'}" data-status="${r.status}"><title>${r.status} ${duration(r.durationMs)} ${r.at}</title></rect>`;
  });
  return html`<svg id="sparkline" class="sparkline" role="img" aria-label="${`last ${shown.length} results: ${shown.filter((r) => r.status === 'failed' || r.status === 'errored').length} failed`}" width="${width}" height="40" viewBox="0 0 ${width} 40" xmlns="http://www.w3.org/2000/svg">${bars}</svg>`;
}

function flakyTable(frame: Frame, tests: readonly FlakyView[]): Html {
  if (tests.length === 0) return html`<p class="note" id="flaky-none">No test has both passed and failed on one commit.</p>`;
  const runLinks = (ids: readonly string[]) => ids.slice(0, 10).map((id) => html`<a class="mono" href="${runsBase(frame.orgId)}/${enc(id)}">${id.slice(0, 8)}</a> `);
  return html`<div class="table-wrap"><table id="flaky"><thead><tr><th scope="col">Test</th><th scope="col">Repository</th><th scope="col">Commit</th><th scope="col">Passed in</th><th scope="col">Failed in</th><th scope="col">Last seen</th></tr></thead><tbody>${tests.map(
    (t) => html`<tr data-test="${testTitle(t)}"><td><a href="${historyHref(frame.orgId, t)}">${testTitle(t)}</a>${t.quarantined ? html` <span class="status s-quarantined">quarantined</span>` : html``}</td><td>${t.repository}</td><td class="mono">${t.sha.slice(0, 12)}</td><td>${runLinks(t.passedRuns)}</td><td>${runLinks(t.failedRuns)}</td><td><time>${t.lastSeenAt}</time></td></tr>`,
  )}</tbody></table></div>`;
}

function quarantineForm(frame: Frame, action: 'add' | 'remove', t: { repository?: string | null; suite: string; name: string }, label: string): Html {
  return html`<form method="post" action="${testsBase(frame.orgId)}/quarantine" class="action" data-action="quarantine-${action}">${csrfField(frame)}<input type="hidden" name="action" value="${action}"><input type="hidden" name="repository" value="${t.repository ?? ''}"><input type="hidden" name="suite" value="${t.suite}"><input type="hidden" name="name" value="${t.name}"><label>Why <input name="reason" required maxlength="1000"></label> <button type="submit">${label}</button></form>`;
}

function quarantineTable(frame: Frame, entries: readonly QuarantineView[]): Html {
  if (entries.length === 0) return html`<p class="note" id="quarantine-none">No test is quarantined.</p>`;
  return html`<div class="table-wrap"><table id="quarantine"><thead><tr><th scope="col">Test</th><th scope="col">Scope</th><th scope="col">Entered</th><th scope="col">Left</th><th scope="col"></th></tr></thead><tbody>${entries.map(
    (q) => html`<tr data-test="${testTitle(q)}" data-state="${q.removedAt === null ? 'active' : 'removed'}"><td><a href="${historyHref(frame.orgId, q)}">${testTitle(q)}</a></td><td>${q.repository ?? 'whole org'}</td><td>${q.addedBy}, <time>${q.addedAt}</time>: ${q.reason}</td><td>${
      q.removedAt === null ? html`—` : html`${q.removedBy ?? ''}, <time>${q.removedAt}</time>: ${q.removedReason ?? ''}`
    }</td><td>${q.removedAt === null ? quarantineForm(frame, 'remove', q, 'Leave quarantine') : html``}</td></tr>`,
  )}</tbody></table></div>`;
}

function historyPage(frame: Frame, h: TestHistoryView): Html {
  const active = h.quarantine.find((q) => q.removedAt === null);
  const repo = h.repository ?? h.results[0]?.repository ?? null;
  const suite = h.suite ?? h.results[0]?.suite ?? '';
  return html`<div id="test-history" data-test="${h.name}">
<p class="crumbs"><a href="${testsBase(frame.orgId)}">Tests</a> › ${h.name}</p>
<h1>${testTitle({ suite, name: h.name })}</h1>
<dl class="facts"><dt>Results</dt><dd id="history-count">${h.results.length}</dd>
<dt>Failure rate</dt><dd id="failure-rate">${h.failureRate === null ? '—' : `${(h.failureRate * 100).toFixed(1)}%`}</dd>
<dt>Median duration</dt><dd id="median-duration">${duration(h.medianDurationMs)}</dd>
<dt>Quarantine</dt><dd>${active === undefined ? html`not quarantined ${h.results.length === 0 ? html`` : quarantineForm(frame, 'add', { repository: repo, suite, name: h.name }, 'Quarantine')}` : html`quarantined by ${active.addedBy}: ${active.reason} ${quarantineForm(frame, 'remove', active, 'Leave quarantine')}`}</dd></dl>
${sparkline(h.results)}
<h2>Flaky on</h2>
${flakyTable(frame, h.flaky)}
<h2>Quarantine history</h2>
${quarantineTable(frame, h.quarantine)}
<h2>Results</h2>
<div class="table-wrap"><table id="history"><thead><tr><th scope="col">When</th><th scope="col">Status</th><th scope="col">Duration</th><th scope="col">Run</th><th scope="col">Commit</th><th scope="col">Message</th></tr></thead><tbody>${h.results.map(
    (r) => html`<tr data-status="${r.status}"><td><time>${r.at}</time></td><td>${statusBadge(r.status)}${r.quarantined ? html` <span class="status s-quarantined">quarantined</span>` : html``}</td><td>${duration(r.durationMs)}</td><td><a class="mono" href="${runsBase(frame.orgId)}/${enc(r.runId)}/tests">${r.runId.slice(0, 8)}</a>${r.attempt > 1 ? html` (attempt ${r.attempt})` : html``}</td><td class="mono">${r.sha.slice(0, 12)}</td><td>${r.message ?? ''}</td></tr>`,
  )}</tbody></table></div>
</div>`;
}

function queryString(request: FastifyRequest, key: string, max: number): string | undefined {
  const value = (request.query as Record<string, unknown>)[key];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length > max) throw new InputError('SVC_ERR_HTTP_INVALID_QUERY', `"${key}" must be a string of at most ${max} characters`);
  return value;
}

export function registerTestPages(app: SvcHttpServer, options: UiOptions): void {
  const { db, broker, logger } = options;

  app.get('/ui/orgs/:orgId/runs/:runId/tests', async (request, reply) => {
    try {
      const { caller, orgId, frame } = await uiCaller(db, request);
      const answer = await askTests(broker, orgId, caller, { view: 'run', runId: runIdOf(request) });
      if (answer.view !== 'run') throw new UnavailableError('SVC_ERR_RELAY_BAD_ANSWER', 'the orchestrator answered another view');
      return sendUiPage(reply, 200, 'Tests', frame, runTestsPage(frame, answer.run));
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });

  app.get('/ui/orgs/:orgId/tests', async (request, reply) => {
    try {
      const { caller, orgId, frame } = await uiCaller(db, request);
      const repository = queryString(request, 'repository', 300);
      const repo = repository === undefined ? {} : { repository };
      const [flaky, quarantine] = await Promise.all([
        askTests(broker, orgId, caller, { view: 'flaky', ...repo, limit: 100 }),
        askTests(broker, orgId, caller, { view: 'quarantine', ...repo, includeRemoved: true }),
      ]);
      const body = html`<h1>Tests</h1>
<form method="get" action="${testsBase(orgId)}/history" class="filters"><label>Test name <input name="name" required maxlength="1000"></label> <label>Suite <input name="suite" maxlength="500"></label> <button type="submit">History</button></form>
<h2>Flaky tests</h2>
${flakyTable(frame, flaky.view === 'flaky' ? flaky.tests : [])}
<h2>Quarantine</h2>
${quarantineTable(frame, quarantine.view === 'quarantine' ? quarantine.entries : [])}`;
      return sendUiPage(reply, 200, 'Tests', { ...frame, current: 'tests' }, body);
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });

  app.get('/ui/orgs/:orgId/tests/history', async (request, reply) => {
    try {
      const { caller, orgId, frame } = await uiCaller(db, request);
      const name = queryString(request, 'name', 1000);
      if (name === undefined) throw new InputError('SVC_ERR_HTTP_INVALID_QUERY', 'name the test: ?name=<test name> (and suite=, repository= to narrow it)');
      const suite = queryString(request, 'suite', 500);
      const repository = queryString(request, 'repository', 300);
      const answer = await askTests(broker, orgId, caller, { view: 'history', name, limit: 200, ...(suite === undefined ? {} : { suite }), ...(repository === undefined ? {} : { repository }) });
      if (answer.view !== 'history') throw new UnavailableError('SVC_ERR_RELAY_BAD_ANSWER', 'the orchestrator answered another view');
      return sendUiPage(reply, 200, `Test ${name.slice(0, 80)}`, { ...frame, current: 'tests' }, historyPage(frame, answer.history));
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });

  app.post('/ui/orgs/:orgId/tests/quarantine', async (request, reply) => {
    try {
      const { caller, orgId } = await uiCaller(db, request);
      const action = formField(request, 'action');
      const name = formField(request, 'name') ?? '';
      const suite = formField(request, 'suite') ?? '';
      const repository = formField(request, 'repository') ?? '';
      const reason = (formField(request, 'reason') ?? '').trim();
      if (action !== 'add' && action !== 'remove') throw new InputError('SVC_ERR_HTTP_INVALID_BODY', 'action must be add or remove');
      if (name === '' || name.length > 1000 || suite.length > 500 || repository.length > 300 || reason === '' || reason.length > 1000) {
        throw new InputError('SVC_ERR_HTTP_INVALID_BODY', 'send the test name (1 to 1000 characters), its suite, the repository (empty: the whole org) and why (1 to 1000 characters)');
      }
      await askTests(broker, orgId, caller, { view: action === 'add' ? 'quarantine.add' : 'quarantine.remove', ...(repository === '' ? {} : { repository }), suite, name, reason });
      logger.info({ orgId, by: caller.actor, action, repository: repository || '(org)', suite, name, via: 'dashboard' }, 'test quarantine changed');
      return reply.code(303).header('location', testsBase(orgId)).send();
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });
}
