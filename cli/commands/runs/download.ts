// `svc runs download <run_id> <name> [--output dir] [--json]`: fetches one artifact of a run
// through the Platform (the relay forwards each chunk request to the run's orchestrator; the CLI
// reaches neither the orchestrator nor storage), checks its sha256 against the digest recorded
// at upload, and only then extracts it into --output (default: the current directory) with the
// hostile-archive checks the agent uses. A mismatch extracts nothing.
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { artifactNameProblem } from '../../../core/artifact-names.ts';
import { InputError, SvcError, UnavailableError } from '../../../core/errors.ts';

export interface DownloadOutput {
  runId: string;
  name: string;
  digest: string;
  sizeBytes: number;
  fileCount: number;
  output: string;
}

/** Chunks read for one artifact at most (2 MiB each: far beyond the largest artifact accepted). */
const MAX_CHUNKS = 1_000_000;

export default class RunsDownload extends SvcCommand {
  static override description = 'Download one artifact of a run through the Platform, check its digest and extract it';
  static override examples = ['<%= config.bin %> runs download 0b7c5b0e-… dist', '<%= config.bin %> runs download 0b7c5b0e-… dist --output ./out'];
  static override args = {
    run_id: Args.string({ required: true, description: 'run id' }),
    name: Args.string({ required: true, description: 'artifact name (as svc runs artifacts lists it)' }),
  };
  static override flags = { output: Flags.string({ char: 'o', description: 'directory to extract into (created if missing)', default: '.' }) };

  async run(): Promise<DownloadOutput> {
    const { args, flags } = await this.parse(RunsDownload);
    const { PlatformClient, checkRunIdArg } = await import('../../platform-client.ts');
    const { extractArchive } = await import('../../../agent/jobs/extract.ts');
    const runId = checkRunIdArg(args.run_id);
    const problem = artifactNameProblem(args.name);
    if (problem !== null) throw new InputError('SVC_ERR_CLI_USAGE', `"${args.name.slice(0, 80)}" is not an artifact name (${problem}); copy it from "svc runs artifacts ${runId}"`);
    const output = resolve(flags.output);
    const client = await PlatformClient.fromConfig();
    await mkdir(output, { recursive: true });
    const scratch = await mkdtemp(join(output, '.svc-download-'));
    try {
      const file = join(scratch, 'artifact.tar.gz');
      const handle = await open(file, 'wx', 0o600);
      const hash = createHash('sha256');
      let offset = 0;
      let first: { digest: string; sizeBytes: number; fileCount: number } | undefined;
      try {
        for (let chunks = 0; ; chunks += 1) {
          if (chunks > MAX_CHUNKS) throw new UnavailableError('SVC_ERR_CLI_ARTIFACT_TRANSFER', `artifact ${args.name} did not end after ${MAX_CHUNKS} chunks; stopped`);
          const chunk = await client.artifactChunk(runId, args.name, offset);
          first ??= chunk.artifact;
          if (chunk.offset !== offset || chunk.artifact.digest !== first.digest) {
            throw new UnavailableError('SVC_ERR_CLI_ARTIFACT_TRANSFER', `artifact ${args.name} changed while it was downloading (or the answer was for another offset); download it again`);
          }
          const bytes = Buffer.from(chunk.data, 'base64');
          hash.update(bytes);
          await handle.write(bytes);
          offset += bytes.length;
          if (chunk.done) break;
          if (bytes.length === 0) throw new UnavailableError('SVC_ERR_CLI_ARTIFACT_TRANSFER', `artifact ${args.name} stopped at byte ${offset} of ${first.sizeBytes}; download it again`);
        }
      } finally {
        await handle.close();
      }
      const info = first!;
      const got = `sha256:${hash.digest('hex')}`;
      if (got !== info.digest || offset !== info.sizeBytes) {
        throw new SvcError(
          'SVC_ERR_CLI_ARTIFACT_DIGEST',
          `artifact ${args.name} of run ${runId} arrived as ${offset} bytes with digest ${got}, but ${info.sizeBytes} bytes with ${info.digest} were recorded at upload; the stored object was altered or damaged, nothing was extracted`,
        );
      }
      await extractArchive(file, output);
      if (!this.jsonEnabled()) this.log(`${args.name}: ${info.fileCount} files, ${info.sizeBytes} bytes, ${info.digest} verified; extracted into ${output}`);
      return { runId, name: args.name, digest: info.digest, sizeBytes: info.sizeBytes, fileCount: info.fileCount, output };
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }
}
