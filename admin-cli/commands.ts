// The `svc-admin` command table (oclif explicit strategy): command id → class.
import type { Command } from '@oclif/core';
import PluginVerify from './commands/plugin/verify.ts';
import RelayOrgCreate from './commands/relay/org/create.ts';
import RelayOrgList from './commands/relay/org/list.ts';
import RelayOrgTokenRotate from './commands/relay/org/token/rotate.ts';

export const COMMANDS: Record<string, Command.Class> = {
  'plugin:verify': PluginVerify,
  'relay:org:create': RelayOrgCreate,
  'relay:org:list': RelayOrgList,
  'relay:org:token:rotate': RelayOrgTokenRotate,
};
