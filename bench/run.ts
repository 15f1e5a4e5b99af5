// `npm run bench [-- <name> [args…]]`: with no name, lists the benchmarks in this folder with the
// first line of their header comment; with a name, runs `bench/<name>.ts` with the remaining
// arguments on this Node (each benchmark prints its own figures and asserts nothing).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// Side-by-side benches against other CI systems live in peers/ (`npm run bench -- peers/buildbot`).
const names = [
  ...readdirSync(here).filter((f) => f.endsWith('.ts') && f !== 'run.ts').map((f) => f.slice(0, -3)),
  ...readdirSync(join(here, 'peers')).filter((f) => f.endsWith('.ts')).map((f) => `peers/${f.slice(0, -3)}`),
].sort();

function summary(name: string): string {
  const first = readFileSync(join(here, `${name}.ts`), 'utf8').split('\n').find((line) => line.startsWith('//'));
  return first === undefined ? '' : first.replace(/^\/\/\s*/, '');
}

const [name, ...rest] = process.argv.slice(2);
if (name === undefined || name === '--help' || name === '-h') {
  process.stdout.write('usage: npm run bench -- <name> [args…]   (or: node bench/<name>.ts [args…])\n\n');
  for (const n of names) process.stdout.write(`  ${n.padEnd(20)} ${summary(n)}\n`);
  process.exit(0);
}
if (!names.includes(name)) {
  process.stderr.write(`no benchmark "${name}"; one of: ${names.join(', ')}\n`);
  process.exit(2);
}
const result = spawnSync(process.execPath, [join(here, `${name}.ts`), ...rest], { stdio: 'inherit' });
process.exit(result.status ?? 1);
