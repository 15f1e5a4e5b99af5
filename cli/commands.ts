// The `svc` command table (oclif explicit strategy): command id → class. Topics use spaces on the
// command line (`svc hook install` is id `hook:install`).
import type { Command } from '@oclif/core';
import Compile from './commands/compile.ts';
import Dev from './commands/dev.ts';
import Doctor from './commands/doctor.ts';
import HookInstall from './commands/hook/install.ts';
import HookPostReceive from './commands/hook/post-receive.ts';
import Init from './commands/init.ts';
import Login from './commands/login.ts';
import Logout from './commands/logout.ts';
import OrgUse from './commands/org/use.ts';
import Preview from './commands/preview.ts';
import Run from './commands/run.ts';
import RunsLogs from './commands/runs/logs.ts';
import RunsShow from './commands/runs/show.ts';
import Types from './commands/types.ts';
import VerifyAttestation from './commands/verify-attestation.ts';
import Workflows from './commands/workflows.ts';

export const COMMANDS: Record<string, Command.Class> = {
  compile: Compile,
  dev: Dev,
  doctor: Doctor,
  'hook:install': HookInstall,
  'hook:post-receive': HookPostReceive,
  init: Init,
  login: Login,
  logout: Logout,
  'org:use': OrgUse,
  preview: Preview,
  run: Run,
  'runs:logs': RunsLogs,
  'runs:show': RunsShow,
  types: Types,
  'verify-attestation': VerifyAttestation,
  workflows: Workflows,
};
