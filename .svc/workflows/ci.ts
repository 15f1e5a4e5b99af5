// svc's own CI, run by svc (issue 41, "svc tests svc"): on pushes to main and pull requests.
//   hygiene      no dependencies: migration numbers unique, every file test/tiers.ts names exists
//   typecheck    npm ci, npm run build (the package's own exports resolve to dist/), then tsgo over
//                the project and the dashboard's browser code
//   build        npm ci, npm run build (dist/, the shipped bins)
//   unit         the unit tier (scripts/test-tiers.ts --tier unit), results as JUnit XML
//                (the tier step's testResults: a test case per top-level subtest, docs/test-results.md; on
//                the step, not the job, so the install step reports no missing file)
//   integration  build, then the integration tier: needs a PostgreSQL on 127.0.0.1:5432 (agent label `postgres`)
//   system       build, then the system tier (the shipped bins on real sockets and processes)
// Locally: `svc run push --local` (all of it, many minutes), or one job with its needs:
// `svc run push --local --job unit` (docs/testing.md "svc tests svc").
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { job, pr, push, workflow, type StepContext } from 'svc/sdk';

const MINUTE = 60_000;

/**
 * Runs a program in the checkout with its own node_modules/.bin first. Its output streams to the
 * step's log as it comes; a non-zero exit throws ctx.$'s command error, which is what a
 * `failed-tests` retry and a quarantine waiver read (docs/test-results.md: a step failed by its
 * tests is one whose command exited non-zero, not one that threw an error of its own).
 */
async function run(ctx: StepContext, argv: readonly string[], timeout = 30 * MINUTE): Promise<void> {
  const bin = join(ctx.repoRoot, 'node_modules', '.bin');
  await ctx.$({ env: { PATH: `${bin}:${process.env['PATH'] ?? ''}`, CI: 'true' }, timeout })`${argv}`;
}

/**
 * `npm ci` without the root's `prepare` (it builds, which is the build job's work), then the
 * install scripts of the installed dependencies that have one (the `node` binary, esbuild, swc,
 * the embedded PostgreSQL): the lock marks them (`hasInstallScript`), so a new such dependency
 * needs no edit here, and the optional ones of other platforms are not installed.
 */
async function install(ctx: StepContext): Promise<void> {
  await run(ctx, ['npm', 'ci', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts']);
  const lock = JSON.parse(readFileSync(join(ctx.repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> };
  const installed = Object.entries(lock.packages)
    .filter(([path, entry]) => entry.hasInstallScript === true && path.startsWith('node_modules/') && existsSync(join(ctx.repoRoot, path, 'package.json')))
    .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
  const names = [...new Set(installed)].sort();
  console.log(`dependencies with install scripts: ${names.join(', ') || 'none'}`);
  if (names.length > 0) await run(ctx, ['npm', 'rebuild', ...names]);
}

/** Duplicate migration numbers, and files test/tiers.ts lists that do not exist. */
function hygieneProblems(root: string): string[] {
  const problems: string[] = [];
  for (const dir of ['kernel/orchestrator/migrations', 'kernel/relay/migrations']) {
    const seen = new Map<string, string>();
    for (const file of readdirSync(join(root, dir)).filter((f) => f.endsWith('.sql')).sort()) {
      const number = file.split('_')[0] ?? file;
      const earlier = seen.get(number);
      if (earlier !== undefined) problems.push(`${dir}: ${earlier} and ${file} share the number ${number}`);
      seen.set(number, file);
    }
  }
  const tiers = readFileSync(join(root, 'test/tiers.ts'), 'utf8');
  for (const [, file] of tiers.matchAll(/'(test\/[^'*{]+\.test\.ts)'/g)) {
    if (file !== undefined && !existsSync(join(root, file))) problems.push(`test/tiers.ts names ${file}, which does not exist`);
  }
  return problems;
}

/** One tier through the suite's runner, its results as JUnit XML under results/. */
const tier = (name: 'unit' | 'integration' | 'system') => async (ctx: StepContext) => {
  mkdirSync(join(ctx.repoRoot, 'results'), { recursive: true });
  await run(ctx, ['tap', 'build']); // tap's plugin set, which the install's skipped `prepare` builds
  await run(ctx, ['node', 'scripts/test-tiers.ts', '--tier', name, '--junit', `results/${name}.xml`], 60 * MINUTE);
};

export default workflow('svc', {
  on: [push({ branches: ['main'] }), pr()],
  jobs: {
    hygiene: job({
      runsOn: ['linux'],
      checkout: { depth: 1 },
      steps: (s) =>
        s.step('check', (ctx) => {
          const problems = hygieneProblems(ctx.repoRoot);
          for (const p of problems) console.log(p);
          if (problems.length > 0) throw new Error(`${problems.length} hygiene problem(s)`);
          console.log('migration numbers unique; every file test/tiers.ts names exists');
        }),
    }),
    typecheck: job({
      runsOn: ['linux'],
      timeout: 60 * MINUTE,
      steps: (s) =>
        s
          .step('install', install)
          // `svc/sdk`, `svc/testing` (the package's own exports, used by tests and fixtures) resolve to dist/.
          .step('build', (ctx) => run(ctx, ['npm', 'run', 'build']))
          .step('typecheck', (ctx) => run(ctx, ['tsgo', '-p', 'tsconfig.json', '--noEmit']))
          .step('typecheck browser', (ctx) => run(ctx, ['tsgo', '-p', 'kernel/relay/dashboard/ui/browser/tsconfig.json', '--noEmit'])),
    }),
    build: job({
      runsOn: ['linux'],
      timeout: 60 * MINUTE,
      steps: (s) => s.step('install', install).step('build', (ctx) => run(ctx, ['npm', 'run', 'build'])),
    }),
    unit: job({
      runsOn: ['linux'],
      needs: ['hygiene'],
      timeout: 60 * MINUTE,
      retry: { maxAttempts: 2, on: ['agent-lost', 'failed-tests'] },
      steps: (s) => s.step('install', install).step('unit tier', tier('unit'), { testResults: 'results/unit.xml' }),
    }),
    integration: job({
      runsOn: ['linux', 'postgres'],
      needs: ['unit'],
      timeout: 90 * MINUTE,
      retry: { maxAttempts: 2, on: ['agent-lost', 'failed-tests'] },
      steps: (s) => s.step('install', install).step('build', (ctx) => run(ctx, ['npm', 'run', 'build'])).step('integration tier', tier('integration'), { testResults: 'results/integration.xml' }),
    }),
    system: job({
      runsOn: ['linux', 'postgres'],
      needs: ['build', 'unit'],
      timeout: 90 * MINUTE,
      retry: { maxAttempts: 2, on: ['agent-lost', 'failed-tests'] },
      steps: (s) => s.step('install', install).step('build', (ctx) => run(ctx, ['npm', 'run', 'build'])).step('system tier', tier('system'), { testResults: 'results/system.xml' }),
    }),
  },
});
