// `svc docs [topic] [--json]`: the documentation shipped with the package (docs/*.md). Without a
// topic it lists the topics with their titles; with one it prints that page. An unknown topic is
// a usage error naming the topics there are.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Args } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { InputError, messageOf } from '../../core/errors.ts';
import { packageRoot } from '../../core/package-info.ts';

export interface DocTopic {
  topic: string;
  title: string;
}

function docsDir(): string {
  return join(packageRoot(), 'docs');
}

/** The title of a page: its first `# ` heading, else the topic. */
function titleOf(text: string, topic: string): string {
  return /^#\s+(.+)$/m.exec(text)?.[1]?.trim() ?? topic;
}

export async function docTopics(): Promise<DocTopic[]> {
  let names: string[];
  try {
    names = (await readdir(docsDir())).filter((n) => n.endsWith('.md')).sort();
  } catch (error) {
    throw new InputError('SVC_ERR_CLI_DOCS_UNREADABLE', `the documentation folder ${docsDir()} cannot be read (${messageOf(error)}); is the package installed whole?`);
  }
  return Promise.all(names.map(async (n) => ({ topic: n.slice(0, -3), title: titleOf(await readFile(join(docsDir(), n), 'utf8'), n.slice(0, -3)) })));
}

export default class Docs extends SvcCommand {
  static override description = 'List the documentation topics shipped with svc, or print one';
  static override examples = ['<%= config.bin %> docs', '<%= config.bin %> docs cli', '<%= config.bin %> docs secrets | less'];
  static override args = { topic: Args.string({ required: false, description: 'a topic (as "svc docs" lists them)' }) };

  async run(): Promise<{ topics: DocTopic[] } | { topic: string; title: string; text: string }> {
    const { args } = await this.parse(Docs);
    const topics = await docTopics();
    if (args.topic === undefined) {
      if (!this.jsonEnabled()) {
        const width = Math.max(...topics.map((t) => t.topic.length));
        for (const t of topics) this.log(`${t.topic.padEnd(width)}  ${t.title}`);
        this.log('');
        this.log('Print one with: svc docs <topic>');
      }
      return { topics };
    }
    const wanted = args.topic.replace(/\.md$/, '');
    const found = topics.find((t) => t.topic === wanted);
    if (found === undefined) throw new InputError(USAGE_ERROR_CODE, `no documentation topic "${args.topic}"; topics: ${topics.map((t) => t.topic).join(', ')}`);
    const text = await readFile(join(docsDir(), `${found.topic}.md`), 'utf8');
    if (!this.jsonEnabled()) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
    return { topic: found.topic, title: found.title, text };
  }
}
