// The `svc-admin` command table (oclif explicit strategy): command id → class.
import type { Command } from '@oclif/core';
import AgentTokenCreate from './commands/agent-token/create.ts';
import AgentTokenList from './commands/agent-token/list.ts';
import AgentTokenRevoke from './commands/agent-token/revoke.ts';
import CacheList from './commands/cache/list.ts';
import CachePurge from './commands/cache/purge.ts';
import CachePurgeLegacy from './commands/cache/purge-legacy.ts';
import PluginVerify from './commands/plugin/verify.ts';
import RotateKey from './commands/rotate-key.ts';
import SigningKeyExport from './commands/signing-key/export.ts';
import SigningKeyGenerate from './commands/signing-key/generate.ts';
import SigningKeyList from './commands/signing-key/list.ts';
import SigningKeyRetire from './commands/signing-key/retire.ts';
import SigningKeyRevoke from './commands/signing-key/revoke.ts';
import SigningKeyRotate from './commands/signing-key/rotate.ts';
import RelayOrgCreate from './commands/relay/org/create.ts';
import RelayOrgList from './commands/relay/org/list.ts';
import RelayOrgTokenRotate from './commands/relay/org/token/rotate.ts';
import RelayPatCreate from './commands/relay/pat/create.ts';
import RelayPatList from './commands/relay/pat/list.ts';
import RelayPatRevoke from './commands/relay/pat/revoke.ts';
import SourceAdd from './commands/source/add.ts';
import SourceList from './commands/source/list.ts';
import SourceRotateSecret from './commands/source/rotate-secret.ts';
import SourceRemove from './commands/source/remove.ts';
import RunsList from './commands/runs/list.ts';
import RunsShow from './commands/runs/show.ts';

export const COMMANDS: Record<string, Command.Class> = {
  'source:add': SourceAdd,
  'source:list': SourceList,
  'source:rotate-secret': SourceRotateSecret,
  'source:remove': SourceRemove,
  'runs:list': RunsList,
  'runs:show': RunsShow,
  'agent-token:create': AgentTokenCreate,
  'agent-token:list': AgentTokenList,
  'agent-token:revoke': AgentTokenRevoke,
  'cache:list': CacheList,
  'cache:purge': CachePurge,
  'cache:purge-legacy': CachePurgeLegacy,
  'plugin:verify': PluginVerify,
  'rotate-key': RotateKey,
  'signing-key:export': SigningKeyExport,
  'signing-key:generate': SigningKeyGenerate,
  'signing-key:list': SigningKeyList,
  'signing-key:retire': SigningKeyRetire,
  'signing-key:revoke': SigningKeyRevoke,
  'signing-key:rotate': SigningKeyRotate,
  'relay:org:create': RelayOrgCreate,
  'relay:org:list': RelayOrgList,
  'relay:org:token:rotate': RelayOrgTokenRotate,
  'relay:pat:create': RelayPatCreate,
  'relay:pat:list': RelayPatList,
  'relay:pat:revoke': RelayPatRevoke,
};
