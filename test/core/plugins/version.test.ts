import { readFile } from 'node:fs/promises';
import t from 'tap';
import { KERNEL_VERSION } from '../../../core/plugins/version.ts';

t.test('KERNEL_VERSION matches package.json', async (t) => {
  const pkg = JSON.parse(await readFile(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  t.equal(KERNEL_VERSION, pkg.version);
});
