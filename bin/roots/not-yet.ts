// Programs whose role has not landed yet say so plainly and exit 1.
export function notAvailable(program: string, what: string): number {
  process.stderr.write(`${program}: not available yet (${what} is still being built); see README.md for what runs today\n`);
  return 1;
}
