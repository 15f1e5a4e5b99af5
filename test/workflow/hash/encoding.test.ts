import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import {
  BINARY_SNIFF_BYTES,
  comparePaths,
  digestContent,
  digestEntries,
  digestFile,
  isBinary,
  normalizeLineEndings,
  sortEntries,
} from '../../../workflow/hash/encoding.ts';
import { tempDir } from '../../fixtures/trees/build-tree.ts';

const sha = (b: Buffer | string): Buffer => createHash('sha256').update(b).digest();

t.test('normalizeLineEndings drops CR only before LF', async (t) => {
  const cases: [string, string][] = [
    ['', ''],
    ['a\r\nb\r\n', 'a\nb\n'],
    ['a\rb', 'a\rb'],
    ['\r\r\n', '\r\n'],
    ['\r', '\r'],
    ['\n\r', '\n\r'],
    ['x\r\n\r\n\r\ny', 'x\n\n\ny'],
  ];
  for (const [input, expected] of cases) t.equal(normalizeLineEndings(Buffer.from(input, 'latin1')).toString('latin1'), expected, JSON.stringify(input));
  const plain = Buffer.from('no carriage returns\n');
  t.equal(normalizeLineEndings(plain), plain, 'returns the same buffer when there is no CR');
});

t.test('isBinary looks for NUL in the first 8000 bytes only', async (t) => {
  t.equal(BINARY_SNIFF_BYTES, 8000);
  t.notOk(isBinary(Buffer.from('text\r\n')));
  t.ok(isBinary(Buffer.from([0x41, 0x00, 0x0d, 0x0a])));
  const late = Buffer.alloc(9000, 0x41);
  late[8000] = 0;
  t.notOk(isBinary(late), 'NUL at offset 8000 is outside the window');
  late[7999] = 0;
  t.ok(isBinary(late), 'NUL at offset 7999 is inside the window');
});

t.test('digestContent: CRLF and LF text hash the same; binary CRLF bytes are kept', async (t) => {
  t.same(digestContent(Buffer.from('a\r\nb\r\n')).digest, digestContent(Buffer.from('a\nb\n')).digest);
  const bin = Buffer.from([0x00, 0x0d, 0x0a]);
  const result = digestContent(bin);
  t.ok(result.binary);
  t.same(result.digest, sha(bin));
  t.notSame(result.digest, digestContent(Buffer.from([0x00, 0x0a])).digest);
  t.equal(result.bytes, 3);
});

t.test('digestFile in chunks equals the whole-buffer digest', async (t) => {
  const dir = await tempDir(t);
  // CRs straddling chunk boundaries (chunks are 1 MiB) and a trailing lone CR.
  const size = 3 * 1024 * 1024 + 17;
  const text = Buffer.alloc(size, 0x61);
  for (const at of [1024 * 1024 - 1, 2 * 1024 * 1024 - 1, 100, 5000]) {
    text[at] = 0x0d;
    text[at + 1] = 0x0a;
  }
  text[1024 * 1024 * 3 - 1] = 0x0d; // CR at a chunk end followed by 'a'
  text[size - 1] = 0x0d;
  const textFile = path.join(dir, 'text');
  await writeFile(textFile, text);
  const whole = digestContent(text);
  const chunked = await digestFile(textFile, 1024);
  t.same(chunked.digest, whole.digest);
  t.equal(chunked.binary, false);
  t.equal(chunked.bytes, size);

  const bin = Buffer.from(text);
  bin[10] = 0;
  const binFile = path.join(dir, 'bin');
  await writeFile(binFile, bin);
  const chunkedBin = await digestFile(binFile, 1024);
  t.same(chunkedBin.digest, sha(bin));
  t.equal(chunkedBin.binary, true);
  t.same((await digestFile(binFile)).digest, chunkedBin.digest, 'small threshold and default agree');
});

t.test('digestEntries is length-prefixed and order independent', async (t) => {
  const d = sha('x');
  // Without length prefixes these two would concatenate to the same bytes.
  const a = digestEntries([{ path: 'ab', digest: d }]);
  const b = digestEntries([{ path: 'a', digest: Buffer.concat([Buffer.from('b'), d]).subarray(0, 32) }]);
  t.not(a, b);
  const e1 = { path: 'b', digest: sha('1') };
  const e2 = { path: 'a', digest: sha('2') };
  t.equal(digestEntries([e1, e2]), digestEntries([e2, e1]));
  t.equal(digestEntries([]), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  const manual = createHash('sha256');
  const len = Buffer.alloc(8);
  len.writeBigUInt64BE(1n);
  manual.update(len).update('a').update(e2.digest).update(len).update('b').update(e1.digest);
  t.equal(digestEntries([e1, e2]), manual.digest('hex'));
});

t.test('paths sort by UTF-8 bytes, not UTF-16 code units', async (t) => {
  const halfwidth = '\uFF61'; // UTF-8 EF BD A1
  const emoji = '\u{1F600}'; // UTF-8 F0 9F 98 80; UTF-16 D83D DE00 sorts before FF61
  t.ok(comparePaths(halfwidth, emoji) < 0);
  t.ok(emoji < halfwidth, 'JS string order would disagree');
  t.same(sortEntries([{ path: emoji }, { path: halfwidth }, { path: 'Z' }, { path: 'a' }]).map((e) => e.path), ['Z', 'a', halfwidth, emoji]);
});
