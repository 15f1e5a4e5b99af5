// Topic help: every topic of both CLIs has its own description. Without one oclif shows the first
// subcommand's text as the topic's (`svc runs` read "Print the log lines of a run…").
import t from 'tap';
import { CLI_DEFINITIONS } from '../../../core/cli/definitions.ts';
import { loadCliConfig, versionLine } from '../../../core/cli/run-oclif.ts';

for (const def of CLI_DEFINITIONS) {
  t.test(`${def.bin}: every topic is described for itself`, async (t) => {
    const config = await loadCliConfig(def);
    const topicNames = new Set<string>();
    for (const command of config.commands) {
      const parts = command.id.split(':');
      for (let i = 1; i < parts.length; i++) topicNames.add(parts.slice(0, i).join(':'));
    }
    t.ok(topicNames.size > 0, `${def.bin} has topics`);
    for (const name of topicNames) {
      const topic = config.topics.find((candidate) => candidate.name === name);
      t.equal(topic?.description, def.topics[name], `topic "${name}" has its declared description`);
      const subcommandTexts = config.commands.filter((c) => c.id.startsWith(`${name}:`)).map((c) => c.summary ?? c.description);
      t.notOk(subcommandTexts.includes(topic?.description), `topic "${name}" does not borrow a subcommand's text`);
    }
    for (const name of Object.keys(def.topics)) t.ok(topicNames.has(name), `declared topic "${name}" has commands`);
  });
}

t.test('--version, answered before oclif loads, is the line oclif itself would print', async (t) => {
  for (const def of CLI_DEFINITIONS) {
    const config = await loadCliConfig(def);
    t.equal(versionLine(), config.userAgent, `${def.bin} --version`);
  }
});
