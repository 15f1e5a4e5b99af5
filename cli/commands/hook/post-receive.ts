// `svc hook post-receive`: run as a bare repository's hooks/post-receive, turn each pushed branch
// or tag into a signed, GitHub-shaped push webhook for the `git` provider. With `--install <repo>`
// it writes the repository's `svc.*` git config and the hook script instead; with `--flush` it
// sends the pushes kept in the repository's outbox (those the receiver did not take) now.
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';
import { hookGit } from '../../git-hook/git.ts';
import { installPostReceiveHook, type InstallHookResult } from '../../git-hook/install.ts';
import { runPostReceive, type HookReport } from '../../git-hook/run-hook.ts';

/** Hooks get a few lines per ref; anything near this is not git talking. */
const MAX_STDIN_BYTES = 4 * 1024 * 1024;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_STDIN_BYTES) throw new InputError(USAGE_ERROR_CODE, `stdin is over ${MAX_STDIN_BYTES} bytes; a post-receive hook gets one "<old> <new> <ref>" line per ref`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export default class HookPostReceive extends SvcCommand {
  static override description =
    "Send pushes to a bare git repository to CI as signed push webhooks (run as the repository's hooks/post-receive), or install that hook with --install";
  static override examples = [
    '<%= config.bin %> hook post-receive --install /srv/git/app.git --webhook-url https://ci.example.com/webhook/acme/git --secret-file /etc/svc/app.secret --source-id 6f1c2b8e-… --repository acme/app --remote-url ssh://git@git.example.com/srv/git/app.git',
    "echo '<old-sha> <new-sha> refs/heads/main' | <%= config.bin %> hook post-receive   # in the bare repository, to resend a push",
    '<%= config.bin %> hook post-receive --flush --git-dir /srv/git/app.git   # send the pushes kept in the outbox now',
  ];
  static override flags = {
    install: Flags.string({ description: 'install the hook into this bare repository instead of running it' }),
    'webhook-url': Flags.string({ description: 'with --install: where pushes are sent (https://<platform>/webhook/<org_id>/git)' }),
    'secret-file': Flags.string({ description: "with --install: file holding the source's webhook secret" }),
    'source-id': Flags.string({ description: 'with --install: the source id the orchestrator gave this repository' }),
    repository: Flags.string({ description: 'with --install: owner/name shown in runs (default local/<directory name>)' }),
    'remote-url': Flags.string({ description: 'with --install: clone URL agents use (default file://<repository path>)' }),
    force: Flags.boolean({ description: 'with --install: replace a post-receive hook svc did not write' }),
    'git-dir': Flags.string({ description: 'repository to read when running the hook (default $GIT_DIR, else the current directory)' }),
    flush: Flags.boolean({ description: "send the pushes kept in the repository's outbox (svc-outbox/) now; reads no stdin" }),
  };

  async run(): Promise<HookReport | InstallHookResult> {
    const { flags } = await this.parse(HookPostReceive);
    if (flags.install !== undefined) return this.#install(flags);
    const installOnly = (['webhook-url', 'secret-file', 'source-id', 'repository', 'remote-url', 'force'] as const).filter((f) => flags[f] !== undefined && flags[f] !== false);
    if (installOnly.length > 0) throw new InputError(USAGE_ERROR_CODE, `--${installOnly[0]} is only used with --install <bare repository>`);
    if (flags.flush !== true && process.stdin.isTTY) {
      throw new InputError(
        USAGE_ERROR_CODE,
        'this reads "<old-sha> <new-sha> <ref>" lines on stdin, as git runs a post-receive hook; to set the hook up use --install <bare repository>',
      );
    }
    const gitDir = flags['git-dir'] ?? process.env['GIT_DIR'] ?? '.';
    const report = await runPostReceive({
      git: hookGit(gitDir),
      stdin: flags.flush === true ? '' : await readStdin(),
      flushOnly: flags.flush === true,
      env: process.env,
      // With --json stdout carries the report alone; the per-push lines go to stderr then.
      print: (line) => (this.jsonEnabled() ? process.stderr : process.stdout).write(`${line}\n`),
      warn: (line) => process.stderr.write(`${line}\n`),
    });
    // git ignores a post-receive hook's exit code (the push is done); a person resending sees it.
    if (!report.ok) process.exitCode = 1;
    return report;
  }

  async #install(flags: { install?: string; 'webhook-url'?: string; 'secret-file'?: string; 'source-id'?: string; repository?: string; 'remote-url'?: string; force?: boolean }): Promise<InstallHookResult> {
    const missing = (['webhook-url', 'secret-file', 'source-id'] as const).filter((f) => flags[f] === undefined);
    if (missing.length > 0) throw new InputError(USAGE_ERROR_CODE, `--install needs ${missing.map((f) => `--${f}`).join(', ')}`);
    const result = await installPostReceiveHook({
      repo: flags.install!,
      webhookUrl: flags['webhook-url']!,
      secretFile: flags['secret-file']!,
      sourceId: flags['source-id']!,
      ...(flags.repository !== undefined ? { repository: flags.repository } : {}),
      ...(flags['remote-url'] !== undefined ? { remoteUrl: flags['remote-url'] } : {}),
      force: flags.force === true,
    });
    if (!this.jsonEnabled()) {
      this.log(`installed ${result.hookPath}`);
      for (const [key, value] of Object.entries(result.config)) this.log(`  ${key} = ${value}`);
      this.log(`  runs: ${result.command.join(' ')} hook post-receive`);
    }
    return result;
  }
}
