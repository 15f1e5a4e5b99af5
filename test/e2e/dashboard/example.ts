// The example repository of the dashboard's browser test: the quickstart plus four workflows on
// push to main — `flood` prints FLOOD_LINES coloured lines (and one that looks like markup), `held`
// waits for the developer's approval, `slow` ticks once a second for two minutes (to watch live
// and to cancel), `package` builds a file, has the orchestrator attest it (ctx.attestProvenance)
// and hands its version on as job outputs (the run page's outputs, attestations and lineage), and
// `restart` fails one job of four on its first run only (restart from failed jobs), and
// `diamond` runs a → b, a → c, b and c → d (the run page's needs graph and timeline).
import { volume } from '../../fixtures/volume.ts';
import { cp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../../fixtures/programs.ts';

/** The flood's length: 100,000 lines in `npm run test:full`, 10,000 in `npm test` (the same paths: paging, scroll to the end). */
export const FLOOD_LINES = volume(10_000, 100_000);
export const PACKAGE_VERSION = '1.4.2';
export const RESTART_CACHE_KEY = 'restart-failed-once-v1';
export const MARKUP_LINE = '<img src=x onerror="document.title=\'pwned\'"> not markup';

export async function dashboardExample(dir: string): Promise<string> {
  await cp(join(REPO_ROOT, 'examples/quickstart'), dir, { recursive: true });
  await rm(join(dir, '.git'), { recursive: true, force: true });
  await rm(join(dir, '.svc/svc.lock.json'), { force: true });
  const workflows = join(dir, '.svc/workflows');
  await writeFile(
    join(workflows, 'flood.ts'),
    `import { job, push, workflow } from 'svc/sdk';
export default workflow('flood', {
  on: push({ branches: ['main'] }),
  jobs: {
    flood: job({
      runsOn: ['local'],
      steps: (s) =>
        s.step('print', () => {
          console.log(${JSON.stringify(MARKUP_LINE)});
          const lines: string[] = [];
          for (let i = 1; i <= ${FLOOD_LINES}; i++) lines.push('\\x1b[32mline\\x1b[0m ' + i + ' \\x1b[1;31mred bold\\x1b[0m');
          process.stdout.write(lines.join('\\n') + '\\n');
        }),
    }),
  },
});
`,
  );
  await writeFile(
    join(workflows, 'held.ts'),
    `import { job, push, workflow } from 'svc/sdk';
export default workflow('held', {
  on: push({ branches: ['main'] }),
  approval: { clauses: [{ users: ['developer'] }], reason: 'dashboard e2e' },
  jobs: {
    go: job({ runsOn: ['local'], steps: (s) => s.step('after approval', () => { console.log('approved and ran'); }) }),
  },
});
`,
  );
  await writeFile(
    join(workflows, 'slow.ts'),
    `import { job, push, workflow } from 'svc/sdk';
export default workflow('slow', {
  on: push({ branches: ['main'] }),
  jobs: {
    tick: job({
      runsOn: ['local'],
      steps: (s) =>
        s.step('tick', async () => {
          for (let i = 1; i <= 120; i++) {
            console.log('tick ' + i);
            await new Promise((r) => setTimeout(r, 1000));
          }
        }),
    }),
  },
});
`,
  );
  await writeFile(
    join(workflows, 'package.ts'),
    `import { mkdir, writeFile } from 'node:fs/promises';
import { job, push, workflow } from 'svc/sdk';
export default workflow('package', {
  on: push({ branches: ['main'] }),
  jobs: {
    package: job({
      runsOn: ['local'],
      steps: (s) =>
        s.step('pack', async (ctx) => {
          await mkdir('dist', { recursive: true });
          await writeFile('dist/app.tgz', 'app built from ' + String(ctx.event.sha ?? 'local') + '\\n');
          const result = await ctx.attestProvenance({ subjects: [{ path: 'dist/app.tgz' }] });
          if (result.deferred) throw new Error('provenance was deferred: ' + JSON.stringify(result.attestations));
          console.log('attested ' + result.bundlePaths.join(', '));
          return { bundle: result.bundlePaths[0] ?? '' };
        }),
      outputs: (ctx) => ({ version: ${JSON.stringify(PACKAGE_VERSION)}, bundle: String(ctx.outputsOf('pack')['bundle']) }),
    }),
  },
});
`,
  );
  // `flaky` fails while the repository's cache lacks RESTART_CACHE_KEY and saves it as it fails, so
  // the run fails once and its restart passes, on the same commit, with nothing outside svc.
  // `prepare` outputs a value new on every execution: `after` handing on the same value proves
  // `prepare` was reused, not run again.
  await writeFile(
    join(workflows, 'restart.ts'),
    `import { mkdir, writeFile } from 'node:fs/promises';
import { job, push, workflow } from 'svc/sdk';
export default workflow('restart', {
  on: push({ branches: ['main'] }),
  jobs: {
    prepare: job({
      runsOn: ['local'],
      steps: (s) => s.step('make', () => ({ value: 'prepared-' + Math.random().toString(36).slice(2) })),
      outputs: (ctx) => ({ value: String(ctx.outputsOf('make')['value']) }),
    }),
    other: job({ runsOn: ['local'], steps: (s) => s.step('other', () => { console.log('other ran'); }) }),
    flaky: job({
      runsOn: ['local'],
      steps: (s) =>
        s.step('check', async (ctx) => {
          if ((await ctx.cache.restore(${JSON.stringify(RESTART_CACHE_KEY)}, { paths: ['marker'] })).hit) return;
          await mkdir('marker', { recursive: true });
          await writeFile('marker/failed-once', 'yes');
          await ctx.cache.save(${JSON.stringify(RESTART_CACHE_KEY)}, ['marker']);
          throw new Error('flaky fails on its first run');
        }),
    }),
    after: job({
      runsOn: ['local'],
      needs: ['prepare', 'flaky'],
      steps: (s) => s.step('hand on', (ctx) => ({ saw: String(ctx.jobOutputs('prepare')?.['value']) })),
      outputs: (ctx) => ({ saw: String(ctx.outputsOf('hand on')['saw']) }),
    }),
  },
});
`,
  );
  await writeFile(
    join(workflows, 'diamond.ts'),
    `import { job, push, workflow } from 'svc/sdk';
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
export default workflow('diamond', {
  on: push({ branches: ['main'] }),
  jobs: {
    a: job({ runsOn: ['local'], steps: (s) => s.step('build', async () => { await pause(300); console.log('built'); }).step('pack', () => { console.log('packed'); }) }),
    b: job({ runsOn: ['local'], needs: ['a'], steps: (s) => s.step('unit tests', async () => { await pause(200); console.log('unit ok'); }) }),
    c: job({ runsOn: ['local'], needs: ['a'], steps: (s) => s.step('lint', () => { console.log('lint ok'); }) }),
    d: job({ runsOn: ['local'], needs: ['b', 'c'], steps: (s) => s.step('publish', () => { console.log('published'); }) }),
  },
});
`,
  );
  return dir;
}
