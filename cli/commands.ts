// The `svc` command table (oclif explicit strategy): command id → module. Topics use spaces on
// the command line (`svc hook install` is id `hook:install`). Classes load on first use.
import { loadCommands } from '../core/cli/lazy-commands.ts';

export const COMMANDS = await loadCommands(import.meta.url, {
  'approve': './commands/approve',
  'compile': './commands/compile',
  'dev': './commands/dev',
  'doctor': './commands/doctor',
  'fixture:list': './commands/fixture/list',
  'fixture:show': './commands/fixture/show',
  'hook:install': './commands/hook/install',
  'hook:post-receive': './commands/hook/post-receive',
  'init': './commands/init',
  'login': './commands/login',
  'logout': './commands/logout',
  'org:use': './commands/org/use',
  'preview': './commands/preview',
  'reject': './commands/reject',
  'run': './commands/run',
  'run:remote': './commands/run/remote',
  'runs:artifacts': './commands/runs/artifacts',
  'runs:download': './commands/runs/download',
  'runs:list': './commands/runs/list',
  'runs:logs': './commands/runs/logs',
  'runs:show': './commands/runs/show',
  'types': './commands/types',
  'verify-attestation': './commands/verify-attestation',
  'workflows': './commands/workflows',
});
