// Job outputs as dependents see them (`jobConfig.needs`, `ctx.jobOutputs(name)`):
// - a plain job: its outputs object;
// - a matrix job: one entry per instance keyed by `axis=value` pairs in axis order
//   (`node=20,os=linux` → that instance's outputs);
// - a dynamic entry: one entry per generated job, keyed by the generated job's name (or
//   `<name>:<matrix key>` for a generated matrix instance).
// Instances or generated jobs that reported no outputs appear with `{}`. Internal names
// (`svc:build`, `svc:filter`, …) are never passed.
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { isInternalJobName, matrixKey } from './names.ts';

type Outputs = Record<string, Record<string, unknown>>;

interface OutputRow {
  name: string;
  matrix: Record<string, unknown> | null;
  generated_by: string | null;
  outputs: unknown;
}

function objectOr(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

export async function outputsOf(pool: Pick<DatabasePool, 'any'>, runId: string, names: readonly string[]): Promise<Outputs> {
  const wanted = [...new Set(names.filter((n) => !isInternalJobName(n)))];
  const out: Outputs = {};
  for (const name of wanted) out[name] = {};
  if (wanted.length === 0) return out;
  const rows = (await pool.any(sql.unsafe`
    SELECT name, matrix, generated_by, outputs FROM jobs
    WHERE run_id = ${runId} AND kind = 'job' AND retried_as IS NULL
      AND (name = ANY(${sql.array(wanted, 'text')}) OR generated_by = ANY(${sql.array(wanted, 'text')}))
    ORDER BY created_at, id`)) as readonly OutputRow[];
  const want = new Set(wanted);
  for (const row of rows) {
    const outputs = objectOr(row.outputs);
    if (want.has(row.name)) {
      const target = out[row.name]!;
      if (row.matrix !== null && typeof row.matrix === 'object') target[matrixKey(row.matrix)] = outputs;
      else Object.assign(target, outputs);
    }
    if (row.generated_by !== null && want.has(row.generated_by)) {
      const key = row.matrix !== null && typeof row.matrix === 'object' ? `${row.name}:${matrixKey(row.matrix)}` : row.name;
      out[row.generated_by]![key] = outputs;
    }
  }
  return out;
}
