// `svc-admin plugin verify <module>`: run a third-party plugin's sign-in phases without
// starting a server, and show which phase fails and why.
import { readFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { parse as parseYaml } from 'yaml';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { verifyPluginModule, type PluginVerifyReport } from '../../../core/plugins/index.ts';
import { InputError, messageOf } from '../../../core/errors.ts';

export default class PluginVerify extends SvcCommand {
  static override description = 'Check that a plugin module signs in (resolve, export, manifest, config, create) without starting a server';
  static override examples = ['<%= config.bin %> plugin verify ./plugins/my-storage.js --config storage-config.yaml'];
  static override args = { module: Args.string({ required: true, description: 'path of the plugin module' }) };
  static override flags = {
    config: Flags.string({ description: "YAML or JSON file holding the plugin's config slice" }),
    'timeout-ms': Flags.integer({ description: 'time limit for create', default: 10_000, min: 1 }),
  };

  async run(): Promise<PluginVerifyReport> {
    const { args, flags } = await this.parse(PluginVerify);
    let slice: unknown = {};
    if (flags.config) {
      try {
        slice = parseYaml(await readFile(flags.config, 'utf8'));
      } catch (error) {
        throw new InputError('SVC_ERR_CLI_CONFIG_FILE', `could not read --config ${flags.config}: ${messageOf(error)}`);
      }
    }
    // The slice applies to whatever the module declares itself to be.
    const configs = new Proxy({} as Record<string, unknown>, { get: () => slice, has: () => true });
    const report = await verifyPluginModule(args.module, { config: configs, baseDir: process.cwd(), createTimeoutMs: flags['timeout-ms'] });
    if (!this.jsonEnabled()) {
      for (const phase of report.phases) {
        this.log(`${phase.status.padEnd(7)} ${phase.phase}${phase.message ? `: ${phase.message}` : ''}`);
      }
      this.log(report.ok ? `plugin ${report.plugin?.id} (${report.plugin?.kind}) signs in` : `sign-in failed at phase "${report.error?.phase}"`);
    }
    if (!report.ok) process.exitCode = 1;
    return report;
  }
}
