// `svc runs artifacts <run_id> [--json]`: the artifacts a run stored (ctx.artifacts.upload),
// through the Platform: name, size, file count, digest, expiry. JSON: `{ runId, artifacts }`.
import { Args } from '@oclif/core';
import type { RunArtifact } from '../../../schemas/wire/relay.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

export function formatArtifacts(artifacts: readonly RunArtifact[]): string[] {
  if (artifacts.length === 0) return ['no artifacts'];
  const rows = artifacts.map((a) => [a.name, formatSize(a.sizeBytes), String(a.fileCount), a.digest.slice(0, 'sha256:'.length + 16), a.expiresAt]);
  const header = ['NAME', 'SIZE', 'FILES', 'DIGEST', 'EXPIRES'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '));
}

export default class RunsArtifacts extends SvcCommand {
  static override description = 'List the artifacts of a run through the Platform';
  static override examples = ['<%= config.bin %> runs artifacts 0b7c5b0e-…', '<%= config.bin %> runs artifacts 0b7c5b0e-… --json'];
  static override args = { run_id: Args.string({ required: true, description: 'run id' }) };

  async run(): Promise<{ runId: string; artifacts: RunArtifact[] }> {
    const { args } = await this.parse(RunsArtifacts);
    const { PlatformClient, checkRunIdArg } = await import('../../platform-client.ts');
    const runId = checkRunIdArg(args.run_id);
    const client = await PlatformClient.fromConfig();
    const artifacts = await client.runArtifacts(runId);
    if (!this.jsonEnabled()) for (const line of formatArtifacts(artifacts)) this.log(line);
    return { runId, artifacts };
  }
}
