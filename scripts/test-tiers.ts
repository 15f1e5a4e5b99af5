// The suite in tiers (docs/testing.md): `npm test` runs unit, integration and system, each through
// the runner in scripts/test-runner/ (each file a tap script in its own process); `npm run test:full` adds the files left to it and runs everything on both PostgreSQL
// flavours with full volumes. Prints each tier's wall time and the slowest files.
//
//   node scripts/test-tiers.ts                  the three tiers of `npm test`
//   node scripts/test-tiers.ts --full           npm run test:full
//   node scripts/test-tiers.ts --tier unit      one tier (repeatable: --tier unit --tier system)
//   node scripts/test-tiers.ts --serial         one tier after another (by default the system tier
//                                               runs beside unit and integration)
//   node scripts/test-tiers.ts --junit FILE     also write the results as JUnit XML (a <testsuite> per tier and
//                                               per file, a <testcase> per top-level subtest: test-runner/junit.ts)
//   node scripts/test-tiers.ts --tally FILE     count what the run costs (children, servers, databases);
//                                               SVC_TEST_TALLY=FILE npm test does the same
//
// Expects dist/ built (the npm scripts build first): the system tier runs the shipped bins.
import { globSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import picomatch from 'picomatch';
import { startTestEmbeddedServer } from '../test/fixtures/db.ts';
import { tallySummary } from '../test/fixtures/tally.ts';
import { FULL_ONLY, SYSTEM, UNIT } from '../test/tiers.ts';
import { reportCoverage } from './test-runner/coverage.ts';
import { junitOf, type JunitFile } from './test-runner/junit.ts';
import { runFiles } from './test-runner/run-files.ts';

type TierName = 'unit' | 'integration' | 'system' | 'full';

interface Tier {
  name: TierName;
  files: string[];
  /** Files run at once. The system and full tiers run one stack at a time. */
  jobs: number;
  /** The per-file hang guard, in seconds: far from any behaviour under test. */
  timeout: number;
  coverage: boolean;
}

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    full: { type: 'boolean', default: false },
    tier: { type: 'string', multiple: true },
    tally: { type: 'string' },
    serial: { type: 'boolean', default: false },
    junit: { type: 'string' },
  },
});
const full = values.full === true;
/** One tier after another (by default the system tier runs beside the in-process ones). */
const serial = values.serial === true;
const TIER_ORDER: readonly TierName[] = ['unit', 'integration', 'system', 'full'];

function partition(): Tier[] {
  const all = globSync('test/**/*.test.ts', { cwd: ROOT }).sort();
  const isUnit = picomatch([...UNIT]);
  const isSystem = picomatch([...SYSTEM]);
  const isFullOnly = picomatch([...FULL_ONLY]);
  const unknown = UNIT.filter((file) => !all.includes(file));
  if (unknown.length > 0) throw new Error(`test/tiers.ts lists files that do not exist: ${unknown.join(', ')}`);
  const tiers: Record<TierName, string[]> = { unit: [], integration: [], system: [], full: [] };
  for (const file of all) {
    if (isSystem(file)) tiers.system.push(file);
    else if (isFullOnly(file)) tiers.full.push(file);
    else if (isUnit(file)) tiers.unit.push(file);
    else tiers.integration.push(file);
  }
  return [
    { name: 'unit', files: tiers.unit, jobs: 3, timeout: 60, coverage: true },
    // test:full runs the fuzz files at five times their cases on both databases (several minutes).
    { name: 'integration', files: tiers.integration, jobs: 3, timeout: full ? 1800 : 300, coverage: true },
    { name: 'system', files: tiers.system, jobs: 1, timeout: 900, coverage: false },
    { name: 'full', files: tiers.full, jobs: 1, timeout: 1800, coverage: false },
  ];
}

interface FileTime extends JunitFile {
  tier: TierName;
}

/** One tier: its files through the runner, the test processes covered when the tier is. */
async function runTier(tier: Tier, env: NodeJS.ProcessEnv, coverageDir: string, tag: string | undefined): Promise<{ code: number; times: FileTime[]; counts: Record<string, number> }> {
  const results = await runFiles({
    root: ROOT,
    files: tier.files,
    jobs: tier.jobs,
    timeout: tier.timeout,
    env: { ...env, SVC_TEST_TIER: tier.name, ...(tier.coverage ? { SVC_TEST_COVERAGE_DIR: coverageDir } : {}) },
    imports: [path.join(ROOT, 'test', 'fixtures', 'child-env.mjs'), ...(tier.coverage ? [path.join(ROOT, 'test', 'fixtures', 'coverage-preload.mjs')] : [])],
    write: (text) => process.stdout.write(text),
    ...(tag === undefined ? {} : { tag }),
  });
  const counts: Record<string, number> = {};
  for (const r of results) for (const [key, n] of Object.entries(r.counts)) counts[key] = (counts[key] ?? 0) + n;
  return {
    code: results.every((r) => r.ok) ? 0 : 1,
    times: results.map((r) => ({ file: r.file, tier: tier.name, seconds: r.seconds, failed: !r.ok, subtests: r.subtests, ...(r.reason === undefined ? {} : { reason: r.reason }) })),
    counts,
  };
}

async function main(): Promise<number> {
  const selected = new Set(values.tier ?? (full ? ['unit', 'integration', 'system', 'full'] : ['unit', 'integration', 'system']));
  const tiers = partition().filter((tier) => selected.has(tier.name) && tier.files.length > 0);
  for (const name of selected) {
    if (!['unit', 'integration', 'system', 'full'].includes(name)) throw new Error(`--tier ${name}: use unit, integration, system or full`);
  }
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_TEST_DIST: '1' };
  // One V8 compile cache for every Node process of the run (test files and the programs they
  // start): each process otherwise parses and compiles the same modules (fastify, pg, the AWS SDK,
  // the kernel) again, about a fifth of a test file's CPU. For one test file, block counts per
  // script were equal with and without a warm cache; a whole run's functions figure read 2 points
  // lower after the cache came in, which is not explained yet (it can only under-report).
  env['NODE_COMPILE_CACHE'] ??= path.join(ROOT, 'node_modules', '.cache', 'svc-test-compile');
  if (full) Object.assign(env, { SVC_TEST_FLAVOURS: 'both', SVC_TEST_FULL: '1' });
  // --tally FILE, or the environment switch SVC_TEST_TALLY=FILE (so `SVC_TEST_TALLY=… npm test` counts).
  const tallyFile = values.tally ?? (process.env['SVC_TEST_TALLY'] || undefined);
  if (tallyFile !== undefined) {
    const tally = path.resolve(tallyFile);
    writeFileSync(tally, '');
    env['SVC_TEST_TALLY'] = tally;
    env['NODE_OPTIONS'] = `${env['NODE_OPTIONS'] ?? ''} --import=${path.join(ROOT, 'test', 'fixtures', 'tally-preload.mjs')}`.trim();
  }
  if (env['SVC_TEST_TALLY'] !== undefined) {
    // This process counts too (the embedded server it starts).
    process.env['SVC_TEST_TALLY'] = env['SVC_TEST_TALLY'];
    // @ts-expect-error: plain JavaScript without types, imported for its effect only.
    await import('../test/fixtures/tally-preload.mjs');
  }
  // The run's one embedded PostgreSQL: every file that runs on the embedded flavour shares it
  // (each test in its own database), instead of each file starting its own.
  const embedded = tiers.some((tier) => tier.name !== 'unit') ? await startTestEmbeddedServer() : undefined;
  if (embedded !== undefined) env['SVC_TEST_EMBEDDED_URL'] = embedded.url;

  const results: Array<{ tier: TierName; files: number; seconds: number; code: number; counts: Record<string, number> }> = [];
  const times: FileTime[] = [];
  const coverageDir = mkdtempSync(path.join(os.tmpdir(), 'svc-test-coverage-'));
  let reportCode = 0;
  try {
    try {
      const runLane = async (lane: Tier[]): Promise<void> => {
        for (const tier of lane) {
          process.stdout.write(`\n# tier ${tier.name}: ${tier.files.length} files, ${tier.jobs} at a time${serial ? '' : ` (its lines end with [${tier.name}])`}\n`);
          const started = performance.now();
          const run = await runTier(tier, env, coverageDir, serial ? undefined : tier.name);
          results.push({ tier: tier.name, files: tier.files.length, seconds: (performance.now() - started) / 1000, code: run.code, counts: run.counts });
          times.push(...run.times);
          process.stdout.write(`# tier ${tier.name} ended: ${run.code === 0 ? 'passed' : 'FAILED'}\n`);
        }
      };
      if (serial) await runLane(tiers);
      else {
        // The system tier's one stack spends most of its time waiting on its programs (a third of a
        // core on average): it runs beside the in-process tiers instead of after them. Still one
        // whole stack at a time; the full tier's come after both.
        await Promise.all([runLane(tiers.filter((t) => t.coverage)), runLane(tiers.filter((t) => t.name === 'system'))]);
        await runLane(tiers.filter((t) => t.name === 'full'));
      }
      results.sort((a, b) => TIER_ORDER.indexOf(a.tier) - TIER_ORDER.indexOf(b.tier));
    } finally {
      await embedded?.stop();
    }
    if (tiers.some((t) => t.coverage)) {
      process.stdout.write(`\n# coverage over the in-process tiers (${tiers.filter((t) => t.coverage).map((t) => t.name).join(', ')})\n`);
      const aboveFloors = await reportCoverage(ROOT, coverageDir, (text) => process.stdout.write(text));
      // The floors (package.json `tap`) are for the in-process suite as a whole: one tier alone
      // (`--tier unit`, a CI job per tier) prints its figures but is not held to them.
      const whole = tiers.some((t) => t.name === 'unit') && tiers.some((t) => t.name === 'integration');
      if (!aboveFloors && !whole) process.stdout.write('# coverage floors apply to the unit and integration tiers run together: not enforced for this selection\n');
      reportCode = aboveFloors || !whole ? 0 : 1;
    }
  } finally {
    rmSync(coverageDir, { recursive: true, force: true });
  }

  if (values.junit !== undefined) writeFileSync(path.resolve(values.junit), junitOf(times, TIER_ORDER));
  process.stdout.write('\n# wall time per tier\n');
  for (const r of results) {
    const counts = Object.entries(r.counts).map(([k, n]) => `${k} ${n}`).join(', ');
    process.stdout.write(`#   ${r.tier.padEnd(12)} ${r.files.toString().padStart(4)} files  ${r.seconds.toFixed(1).padStart(7)} s  ${r.code === 0 ? 'passed' : 'FAILED'}  (assertions: ${counts})\n`);
  }
  process.stdout.write('# 15 slowest files\n');
  for (const f of [...times].sort((a, b) => b.seconds - a.seconds).slice(0, 15)) {
    process.stdout.write(`#   ${f.seconds.toFixed(1).padStart(7)} s  ${f.tier.padEnd(12)} ${f.file}${f.failed ? '  (failed)' : ''}\n`);
  }
  // A file over a minute in `npm test` is a defect to split or move (docs/testing.md).
  const long = full ? [] : times.filter((f) => f.seconds > 60);
  if (long.length > 0) process.stdout.write(`# over 60 s in npm test (split or move them): ${long.map((f) => f.file).join(', ')}\n`);
  if (env['SVC_TEST_TALLY']) process.stdout.write(`\n${tallySummary(env['SVC_TEST_TALLY'])}\n`);
  return results.some((r) => r.code !== 0) || reportCode !== 0 ? 1 : 0;
}

process.exitCode = await main();
