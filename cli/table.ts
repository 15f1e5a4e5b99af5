// Plain text tables for the Platform commands: a heading row, then one row per item, columns
// padded to their widest cell (the last column is not padded).
export function formatTable(headings: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = headings.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  return [headings, ...rows].map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd());
}
