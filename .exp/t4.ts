import * as tar from 'tar';
import { mkdtempSync, writeFileSync, readdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extractArchive } from '../agent/jobs/extract.ts';
const entries = [{"path":"/a/dir","type":"Directory","linkpath":"sp ace/link/dir/c/b","body":"M7"},{"path":"..","type":"CharacterDevice","linkpath":"a","body":"x>;l|.bq_6"},{"path":"/./link","type":"Link","linkpath":"..","body":"y"},{"path":"a","type":"File","linkpath":"a/a.././dir","body":"%!)ffRBF"},{"path":"/./c/b","type":"SymbolicLink","linkpath":"..","body":"[D+"}];
const blocks: Buffer[] = [];
for (const e of entries) {
  const isFile = e.type === 'File';
  const data = Buffer.from(isFile ? e.body : '', 'utf8');
  const h = new tar.Header({ path: e.type === 'Directory' && !e.path.endsWith('/') ? `${e.path}/` : e.path, type: e.type as never, ...(e.type === 'SymbolicLink' || e.type === 'Link' ? { linkpath: e.linkpath } : {}), size: data.length, mode: 0o644, mtime: new Date(0), uid: 0, gid: 0 });
  h.encode();
  blocks.push(h.block!, data, Buffer.alloc((512 - (data.length % 512)) % 512));
}
blocks.push(Buffer.alloc(1024));
const root = mkdtempSync(path.join(tmpdir(), 'x-'));
writeFileSync(path.join(root, 'in.tar'), Buffer.concat(blocks));
const r = await extractArchive(path.join(root, 'in.tar'), path.join(root, 'dest')).then(() => 'ok', (e) => `err ${e.code} ${e.message}`);
console.log(r, existsSync(root) ? readdirSync(root) : 'ROOT GONE');
