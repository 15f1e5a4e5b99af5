// The coverage report over the in-process tiers: reads the block coverage each test process wrote
// (test/fixtures/coverage-preload.mjs), turns it into line, statement, branch and function figures
// with c8, prints the summary and checks the floors in package.json's `tap` section (the same
// numbers `tap` checks when a developer runs a file on its own).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

interface Summary {
  [metric: string]: { pct: number; covered: number; total: number };
}
interface CoverageMap {
  getCoverageSummary(): { data: Summary };
}
interface C8Report {
  getCoverageMapFromAllCoverageFiles(): Promise<CoverageMap>;
}
type ReportCtor = new (options: Record<string, unknown>) => C8Report;

export const METRICS = ['statements', 'branches', 'functions', 'lines'] as const;

/** The floors from package.json's `tap` section (lines, functions, branches, statements). */
export function coverageFloors(root: string): Record<(typeof METRICS)[number], number> {
  const tap = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { tap?: Record<string, unknown> }).tap ?? {};
  const floor = (key: string) => (typeof tap[key] === 'number' ? tap[key] : 0);
  return { statements: floor('statements'), branches: floor('branches'), functions: floor('functions'), lines: floor('lines') };
}

/** Prints the summary; resolves false when a figure is under its floor (each one named). */
export async function reportCoverage(root: string, dir: string, write: (text: string) => void): Promise<boolean> {
  const { Report } = require('c8') as { Report: ReportCtor };
  const libReport = require('istanbul-lib-report') as { createContext(o: Record<string, unknown>): unknown };
  const reports = require('istanbul-reports') as { create(name: string, o?: Record<string, unknown>): { execute(context: unknown): void } };
  const report = new Report({
    tempDirectory: dir,
    reportsDirectory: path.join(root, '.tap', 'report'),
    reporter: [],
    src: [root],
    // The preload already kept only the repository's own scripts; these repeat its rule for c8.
    exclude: ['node_modules/**', 'test/**', '**/*.test.*', 'dist/vendor/**', '.tap/**'],
    extension: ['.ts', '.js', '.mjs', '.cjs'],
    excludeNodeModules: true,
    omitRelative: true,
    all: false,
  });
  const coverageMap = await report.getCoverageMapFromAllCoverageFiles();
  const context = libReport.createContext({ dir: path.join(root, '.tap', 'report'), coverageMap });
  // text-summary writes through console.log; the runner's own output goes the same way.
  reports.create('text-summary').execute(context);
  const summary = coverageMap.getCoverageSummary().data;
  const floors = coverageFloors(root);
  let ok = true;
  for (const metric of METRICS) {
    const pct = summary[metric]?.pct ?? 0;
    if (pct < floors[metric]) {
      ok = false;
      write(`# coverage: ${metric} ${pct} % is under the floor of ${floors[metric]} % (package.json, tap.${metric})\n`);
    }
  }
  return ok;
}
