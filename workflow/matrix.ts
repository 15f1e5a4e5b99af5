// Static matrix expansion, shared by run creation (orchestrator), dynamic job generation and
// local runs (CLI): the same axes give the same job instances, in the same order, everywhere.
export type MatrixValue = string | number | boolean;

/** Every combination of a static matrix, axes in key order. */
export function expandMatrix(axes: Record<string, readonly MatrixValue[]>): Record<string, MatrixValue>[] {
  let combos: Record<string, MatrixValue>[] = [{}];
  for (const name of Object.keys(axes).sort()) {
    const next: Record<string, MatrixValue>[] = [];
    for (const combo of combos) for (const value of axes[name] ?? []) next.push({ ...combo, [name]: value });
    combos = next;
  }
  return combos;
}

