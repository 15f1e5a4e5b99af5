// What `svc tests quarantine add` and `remove` share: the test (name argument, --suite), the scope
// (--repository, or the whole org) and the reason, which the quarantine list records with who.
import { Args, Flags } from '@oclif/core';

export const quarantineArgs = { name: Args.string({ description: 'the test name', required: true }) };
export const quarantineFlags = {
  suite: Flags.string({ description: 'the test\'s suite ("" for none)', default: '' }),
  repository: Flags.string({ description: 'one repository (owner/name); without it: every repository of the org' }),
  reason: Flags.string({ description: 'why (recorded with your name and the time)', required: true }),
};
