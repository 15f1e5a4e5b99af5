// The `svc-admin` command table (oclif explicit strategy): command id → class.
import type { Command } from '@oclif/core';
import PluginVerify from './commands/plugin/verify.ts';

export const COMMANDS: Record<string, Command.Class> = {
  'plugin:verify': PluginVerify,
};
