// `svc run remote [<fixture-or-glob>] [flags]` (spec "Developer CLI"; docs/run-remote.md): runs
// fixtures of `.svc/tests/*.ts` on the orchestrator's agents against this working tree — the
// commit at HEAD plus the uncommitted changes, sealed and uploaded through the Platform. With no
// name (and no --all or --pick) it lists the fixtures. Exit 0 when every run passed, 1 when one
// failed, 2 on a usage error (`--pick` with a name, --all or --workflow; --pick off a terminal).
import { enableCompileCache } from 'node:module';
import { createInterface } from 'node:readline/promises';
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';

export default class RunRemote extends SvcCommand {
  static override description = 'Run test fixtures (.svc/tests/*.ts) on the orchestrator against this working tree (HEAD plus uncommitted changes)';
  static override examples = [
    '<%= config.bin %> run remote',
    '<%= config.bin %> run remote ci-pull-request',
    '<%= config.bin %> run remote "ci-*" --parallel --junit results.xml',
    '<%= config.bin %> run remote --all --json',
    '<%= config.bin %> run remote --pick',
  ];
  // --json here prints one object per run, one line each (not oclif's single document).
  static override enableJsonFlag = false;
  static override args = { fixture: Args.string({ description: 'fixture id or glob (no name: list the fixtures)' }) };
  static override flags = {
    all: Flags.boolean({ description: 'run every fixture' }),
    parallel: Flags.boolean({ description: 'run the fixtures concurrently' }),
    workflow: Flags.string({ description: 'run only this workflow of the matched ones' }),
    pick: Flags.boolean({ description: 'choose a fixture interactively (a terminal only)' }),
    quiet: Flags.boolean({ description: 'print only the result lines' }),
    json: Flags.boolean({ description: 'one JSON object per run, one line each' }),
    junit: Flags.string({ description: 'write JUnit XML to this file (one testsuite per fixture run, one testcase per job)' }),
    'no-wait': Flags.boolean({ description: 'print the run ids and exit 0 without waiting' }),
    env: Flags.string({ description: 'a secret for the run, KEY=VALUE (repeatable; wins over local secret files and test contexts)', multiple: true }),
    context: Flags.string({ description: 'a context secret, <ctx>.<KEY>=<value> (repeatable)', multiple: true }),
    debug: Flags.boolean({ description: 'print why workflows did not match (stderr)' }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(RunRemote);
    if (flags.pick && (args.fixture !== undefined || flags.all || flags.workflow !== undefined)) {
      throw new InputError(USAGE_ERROR_CODE, '--pick cannot combine with a fixture name, --all or --workflow');
    }
    if (flags.all && args.fixture !== undefined) throw new InputError(USAGE_ERROR_CODE, '--all runs every fixture: leave out the fixture name');
    if (flags.pick && !(process.stdin.isTTY && process.stderr.isTTY)) {
      throw new InputError(USAGE_ERROR_CODE, '--pick needs a terminal to choose on; name the fixture instead (svc run remote <fixture>)');
    }
    enableCompileCache();
    const { projectFixtures, runRemote, selectFixtures } = await import('../../remote-run/run-remote.ts');
    const { root, fixtures } = await projectFixtures(process.cwd());
    if (args.fixture === undefined && !flags.all && !flags.pick) {
      if (flags.json) for (const f of fixtures) this.log(JSON.stringify({ id: f.id, file: f.file }));
      else if (fixtures.length === 0) this.log('no fixtures: declare one in .svc/tests/<name>.ts with fixture(id, { event })');
      else for (const f of fixtures) this.log(`${f.id}  (${f.file})`);
      return;
    }
    let chosen = flags.all ? fixtures : args.fixture !== undefined ? selectFixtures(fixtures, args.fixture) : [];
    if (flags.pick) chosen = [await this.#pick(fixtures)];
    if (chosen.length === 0) throw new InputError('SVC_ERR_FIXTURE_NOT_FOUND', 'no fixtures to run: declare one in .svc/tests/<name>.ts with fixture(id, { event })');
    const { PlatformClient } = await import('../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const abort = new AbortController();
    const interrupt = () => abort.abort(new Error('interrupted'));
    process.once('SIGINT', interrupt);
    try {
      const result = await runRemote({
        cwd: process.cwd(),
        root,
        client,
        fixtures: chosen,
        ...(flags.workflow === undefined ? {} : { workflow: flags.workflow }),
        parallel: flags.parallel,
        quiet: flags.quiet,
        json: flags.json,
        ...(flags.junit === undefined ? {} : { junit: flags.junit }),
        noWait: flags['no-wait'],
        env: flags.env ?? [],
        context: flags.context ?? [],
        debug: flags.debug,
        out: (line) => this.log(line),
        err: (line) => void process.stderr.write(`${line}\n`),
        progress: process.stderr.isTTY === true && !flags.quiet && !flags.json,
        signal: abort.signal,
      });
      if (!result.passed) process.exitCode = 1;
    } finally {
      process.off('SIGINT', interrupt);
    }
  }

  async #pick<T extends { id: string; file: string }>(fixtures: readonly T[]): Promise<T> {
    if (fixtures.length === 0) throw new InputError('SVC_ERR_FIXTURE_NOT_FOUND', 'no fixtures to pick from: declare one in .svc/tests/<name>.ts');
    fixtures.forEach((f, i) => process.stderr.write(`${String(i + 1).padStart(3)}) ${f.id}  (${f.file})\n`));
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      for (;;) {
        const answer = (await rl.question('fixture number or id: ')).trim();
        const byNumber = /^\d+$/.test(answer) ? fixtures[Number(answer) - 1] : undefined;
        const found = byNumber ?? fixtures.find((f) => f.id === answer);
        if (found !== undefined) return found;
        process.stderr.write(`"${answer}" is neither a number from 1 to ${fixtures.length} nor a fixture id\n`);
      }
    } finally {
      rl.close();
    }
  }
}
