// svc's own CI, run by svc (issue 41, "svc tests svc"): on pushes to main and pull requests.
//   hygiene      no dependencies: migration numbers unique, every file test/tiers.ts names exists
//   typecheck    npm ci, npm run build (the package's own exports resolve to dist/), then tsgo over
//                the project and the dashboard's browser code
//   build        npm ci, npm run build (dist/, the shipped bins)
//   unit         the unit tier (scripts/test-tiers.ts --tier unit), results as JUnit XML
//                (testResults: one test case per test file, docs/test-results.md)
//   integration  build, then the integration tier: needs a PostgreSQL on 127.0.0.1:5432 (agent label `postgres`)
//   system       build, then the system tier (the shipped bins on real sockets and processes)
// Locally: `svc run push --local` (all of it, many minutes), or one job with its needs:
// `svc run push --local --job unit` (docs/testing.md "svc tests svc").
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { job, pr, push, workflow, type StepContext } from 'svc/sdk';

const MINUTE = 60_000;

/** Runs a program in the checkout with its own node_modules/.bin first; prints the output's tail. */
async function run(ctx: StepContext, argv: readonly string[], timeout = 30 * MINUTE): Promise<void> {
  const bin = join(ctx.repoRoot, 'node_modules', '.bin');
  const result = await ctx.$({ env: { PATH: `${bin}:${process.env['PATH'] ?? ''}`, CI: 'true' }, reject: false, timeout })`${argv}`;
  const output = `${result.stdout}\n${result.stderr}`.trim().split('\n');
  for (const line of output.slice(-80)) console.log(line);
  if (result.exitCode !== 0) throw new Error(`${argv.join(' ')} exited with ${result.exitCode}`);
}

/**
 * `npm ci` without the root's `prepare` (it builds, which is the build job's work), then the
 * install scripts of the dependencies that have one (the `node` binary, esbuild, swc, the
 * embedded PostgreSQL), found by `npm query` so a new such dependency needs no edit here.
 */
async function install(ctx: StepContext): Promise<void> {
  await run(ctx, ['npm', 'ci', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts']);
  const query = await ctx.$`npm query ${':attr(scripts, [preinstall]), :attr(scripts, [install]), :attr(scripts, [postinstall])'}`;
  const names = [...new Set((JSON.parse(query.stdout) as Array<{ name: string }>).map((p) => p.name))].sort();
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
      testResults: 'results/unit.xml',
      steps: (s) => s.step('install', install).step('unit tier', tier('unit')),
    }),
    integration: job({
      runsOn: ['linux', 'postgres'],
      needs: ['unit'],
      timeout: 90 * MINUTE,
      retry: { maxAttempts: 2, on: ['agent-lost', 'failed-tests'] },
      testResults: 'results/integration.xml',
      steps: (s) => s.step('install', install).step('build', (ctx) => run(ctx, ['npm', 'run', 'build'])).step('integration tier', tier('integration')),
    }),
    system: job({
      runsOn: ['linux', 'postgres'],
      needs: ['build', 'unit'],
      timeout: 90 * MINUTE,
      retry: { maxAttempts: 2, on: ['agent-lost', 'failed-tests'] },
      testResults: 'results/system.xml',
      steps: (s) => s.step('install', install).step('build', (ctx) => run(ctx, ['npm', 'run', 'build'])).step('system tier', tier('system')),
    }),
  },
});
