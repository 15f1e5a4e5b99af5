// Fuzzing the agent's archive extraction (agent/jobs/extract.ts) with generated tarballs: entries
// with `..`, absolute and drive-letter paths, backslashes, empty segments, symlinks and hard links
// aimed inside, outside and through each other (a link to a directory, then a file through that
// link), and entry types that are not files. Whatever the archive, extraction either refuses it
// or writes only inside the destination: after every case the test walks the parent directory
// and resolves every link written. A refusal by the scan writes nothing at all.
// Cases: SVC_FUZZ_RUNS (default 2,000).
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import * as tar from 'tar';
import { extractArchive, HostileArchiveError } from '../../agent/jobs/extract.ts';
import { describeTally, fuzzRuns, tally } from './arbitraries.ts';

// Long runs (SVC_FUZZ_RUNS) take minutes, also when this file is run on its own.
const RUNS = fuzzRuns(2_000);

const segment = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'b', 'c', 'link', 'dir') },
  { weight: 2, arbitrary: fc.constantFrom('..', '.', '') },
  { weight: 1, arbitrary: fc.constantFrom('C:', '\\..', 'x\\..\\..', 'ü', 'sp ace', '..a', 'a..') },
);
const entryPath = fc
  .record({ absolute: fc.integer({ min: 0, max: 99 }).map((n) => n < 15), parts: fc.array(segment, { minLength: 1, maxLength: 5 }) })
  .map(({ absolute, parts }) => `${absolute ? '/' : ''}${parts.join('/')}`);
const entry = fc.record({
  path: entryPath,
  type: fc.oneof({ weight: 5, arbitrary: fc.constantFrom('File', 'Directory', 'SymbolicLink') }, { weight: 2, arbitrary: fc.constant('Link') }, { weight: 1, arbitrary: fc.constantFrom('FIFO', 'CharacterDevice') }),
  linkpath: fc.oneof(entryPath, fc.constantFrom('/etc', '/tmp', '..', '../..', '.', 'a')),
  body: fc.string({ maxLength: 40 }),
});

function tarball(entries: Array<{ path: string; type: string; linkpath: string; body: string }>): Buffer | undefined {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const isFile = e.type === 'File';
    const data = Buffer.from(isFile ? e.body : '', 'utf8');
    const header = new tar.Header({
      path: e.type === 'Directory' && !e.path.endsWith('/') ? `${e.path}/` : e.path,
      type: e.type as never,
      ...(e.type === 'SymbolicLink' || e.type === 'Link' ? { linkpath: e.linkpath } : {}),
      size: data.length,
      mode: e.type === 'Directory' ? 0o755 : 0o644,
      mtime: new Date(0),
      uid: 0,
      gid: 0,
    });
    header.encode();
    if (header.needPax || header.block === undefined) return undefined; // long names need pax headers: not this generator's concern
    blocks.push(header.block, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** Every path under `root` that is not the destination, the archive or inside the destination. */
function escapes(root: string, dest: string, archive: string): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      const inside = full === dest || full.startsWith(`${dest}${path.sep}`);
      const scaffold = full === path.join(root, 'l1') || full === path.join(root, 'l1', 'l2');
      if (!inside && !scaffold && full !== archive) found.push(`written outside: ${path.relative(root, full)}`);
      const stat = lstatSync(full);
      if (stat.isSymbolicLink()) {
        const target = path.resolve(path.dirname(full), readlinkSync(full));
        if (target !== dest && !target.startsWith(`${dest}${path.sep}`)) found.push(`link leaves the destination: ${path.relative(root, full)} -> ${readlinkSync(full)}`);
      } else if (stat.isDirectory()) walk(full);
      else if (!stat.isFile()) found.push(`not a file, directory or link: ${path.relative(root, full)}`);
    }
  };
  walk(root);
  return found;
}

t.test(`${RUNS} generated archives: refused, or written only inside the destination`, async (t) => {
  const outcomes = new Map<string, number>();
  // Each case has a directory of its own; the destination sits three levels below it, so an
  // entry or link escaping by up to three levels still lands where the walk looks.
  const roots: string[] = [];
  t.teardown(() => {
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  });
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(entry, { minLength: 1, maxLength: 6 }), async (entries) => {
      const bytes = tarball(entries);
      if (bytes === undefined) return;
      const root = mkdtempSync(path.join(tmpdir(), 'archive-fuzz-'));
      roots.push(root);
      n++;
      mkdirSync(path.join(root, 'l1', 'l2'), { recursive: true });
      const archive = path.join(root, 'in.tar');
      writeFileSync(archive, bytes);
      const dest = path.join(root, 'l1', 'l2', 'dest');
      let hang: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          extractArchive(archive, dest),
          new Promise((_, reject) => {
            hang = setTimeout(() => reject(new Error(`extraction never finished: ${JSON.stringify(entries)}`)), 30_000);
          }),
        ]);
        tally(outcomes, 'extracted');
      } catch (error) {
        if (error instanceof HostileArchiveError) {
          tally(outcomes, 'refused by the scan');
          if (existsSync(dest)) throw new Error(`the scan refused the archive but ${dest} exists`);
        } else if ((error as Error).message.startsWith('extraction never finished')) throw error;
        else tally(outcomes, `refused by tar: ${(error as { code?: string }).code ?? (error as Error).name}`);
      } finally {
        clearTimeout(hang);
      }
      const found = escapes(root, dest, archive);
      rmSync(root, { recursive: true, force: true });
      roots.pop();
      if (found.length > 0) throw new Error(`${found.join('; ')} — entries: ${JSON.stringify(entries)}`);
    }),
    { numRuns: RUNS, endOnFailure: true },
  );
  t.comment(`archives tried: ${RUNS}; outcomes: ${describeTally(outcomes)}`);
  t.ok((outcomes.get('refused by the scan') ?? 0) > 0, 'the generator does produce hostile archives');
  t.ok((outcomes.get('extracted') ?? 0) > 0, 'and harmless ones');
});
