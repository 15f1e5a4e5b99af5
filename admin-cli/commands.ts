// The `svc-admin` command table (oclif explicit strategy): command id → class.
import type { Command } from '@oclif/core';
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

export const COMMANDS: Record<string, Command.Class> = {
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
};
