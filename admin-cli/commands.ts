// The `svc-admin` command table (oclif explicit strategy): command id → module. Classes load
// on first use.
import { lazyCommands } from '../cli/framework/lazy-commands.ts';

export const COMMANDS = lazyCommands(import.meta.url, {
  'source:add': './commands/source/add',
  'source:list': './commands/source/list',
  'source:rotate-secret': './commands/source/rotate-secret',
  'source:remove': './commands/source/remove',
  'runs:list': './commands/runs/list',
  'runs:show': './commands/runs/show',
  'agent-token:create': './commands/agent-token/create',
  'agent-token:list': './commands/agent-token/list',
  'agent-token:revoke': './commands/agent-token/revoke',
  'cache:list': './commands/cache/list',
  'cache:purge': './commands/cache/purge',
  'cache:purge-legacy': './commands/cache/purge-legacy',
  'plugin:verify': './commands/plugin/verify',
  'rotate-key': './commands/rotate-key',
  'signing-key:export': './commands/signing-key/export',
  'signing-key:generate': './commands/signing-key/generate',
  'signing-key:list': './commands/signing-key/list',
  'signing-key:retire': './commands/signing-key/retire',
  'signing-key:revoke': './commands/signing-key/revoke',
  'signing-key:rotate': './commands/signing-key/rotate',
  'relay:org:create': './commands/relay/org/create',
  'relay:org:list': './commands/relay/org/list',
  'relay:org:token:rotate': './commands/relay/org/token/rotate',
  'relay:pat:create': './commands/relay/pat/create',
  'relay:pat:list': './commands/relay/pat/list',
  'relay:pat:revoke': './commands/relay/pat/revoke',
});
