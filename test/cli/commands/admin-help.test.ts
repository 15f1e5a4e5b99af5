// `svc admin <command> --help` is the operator command's help, not `svc admin`'s own: svc hands
// every argument (`--help` and `--version` included) to svc-admin. In-process (runCli, the bins'
// own main); the svc-admin svc starts is a script recording its arguments, and svc-admin itself,
// in-process too, shows what those arguments print.
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { svcArgv } from '../../../cli/main.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';

const dir = await mkdtemp(join(tmpdir(), 'svc-admin-help-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const recorded = join(dir, 'args.txt');
const script = join(dir, 'fake-svc-admin.sh');
await writeFile(script, `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done > ${JSON.stringify(recorded)}\n`);
await chmod(script, 0o755);
const env: NodeJS.ProcessEnv = { ...process.env, SVC_ADMIN_BIN: script, XDG_CONFIG_HOME: dir };

async function handedOver(args: string[]): Promise<{ args: string[]; stdout: string; code: number | null }> {
  await rm(recorded, { force: true });
  const run = await runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env });
  const text = await readFile(recorded, 'utf8').catch(() => '');
  return { args: text === '' ? [] : text.trimEnd().split('\n'), stdout: run.stdout, code: run.code };
}

t.test('--help and --version after svc admin are svc-admin\'s', async (t) => {
  const help = await handedOver(['admin', 'rotate-key', '--help']);
  t.equal(help.code, 0);
  t.same(help.args, ['rotate-key', '--help'], 'svc-admin got the command and --help');
  t.notMatch(help.stdout, /Run the operator CLI svc-admin/, 'svc did not print its own help for `svc admin`');
  const front = await handedOver(['admin', '--help']);
  t.same(front.args, [], '`svc admin --help` alone is the front\'s own help: svc-admin is not started');
  t.match(front.stdout, /Run the operator CLI svc-admin/);
  t.match(front.stdout, /admin rotate-key --help/, 'which says how to get an operator command\'s help');
  t.same((await handedOver(['admin', 'runs', 'list', '--json', '--version'])).args, ['runs', 'list', '--json', '--version']);
  t.same((await handedOver(['admin', '--', 'signing-key', '--help'])).args, ['signing-key', '--help'], 'a leading -- is still dropped');
  t.same((await handedOver(['admin', 'signing-key', '--', '--help'])).args, ['signing-key', '--', '--help'], 'a later -- is svc-admin\'s');

  // What svc-admin prints for those arguments: the operator command's help.
  const operator = await runCli(join(REPO_ROOT, 'bin/svc-admin.ts'), help.args, { env });
  t.equal(operator.code, 0);
  t.match(operator.stdout, /svc-admin rotate-key/);
});

t.test('only `svc admin <args>` gets its arguments moved after --', async (t) => {
  t.same(svcArgv(['admin', 'runs', '--help']), ['admin', '--', 'runs', '--help']);
  t.same(svcArgv(['admin', '-h']), ['admin', '-h']);
  t.same(svcArgv(['admin']), ['admin']);
  t.same(svcArgv(['runs', 'list', '--help']), ['runs', 'list', '--help']);
  t.same(svcArgv(['help', 'admin']), ['help', 'admin']);
});
