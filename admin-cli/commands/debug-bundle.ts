// `svc-admin debug-bundle [--fleet] [--out <file>] [--url <node>] [--token <t>] [--json]`: a
// .tar.gz for a support request. It holds, for this machine's orchestrator (or with --fleet every
// live node of the cluster, from the nodes table): versions, health, redacted config and recent
// log lines (each node's `GET /api/v1/admin/debug`), plus the cluster membership and this CLI's
// own redacted config and versions. A node that does not answer is recorded as unreachable in
// manifest.json and nodes/<id>/unreachable.json. No secret is written: configs are redacted on
// the node and here (kernel/services/config/redact-deep.ts), log lines were redacted when logged.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { Flags } from '@oclif/core';
import * as tar from 'tar';
import { SvcCommand, USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { InputError, messageOf } from '../../core/errors.ts';
import { aliveWindowMs } from '../../kernel/orchestrator/cluster/subsystem.ts';
import { listClusterNodes } from '../../kernel/orchestrator/cluster/membership.ts';
import { migrationLevel, staticVersions } from '../../kernel/orchestrator/cluster/debug.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR } from '../../kernel/orchestrator/database.ts';
import { redactConfigDeep } from '../../kernel/services/config/redact-deep.ts';
import { adminConfig, databaseFlag } from './source/shared.ts';
import { askNode, liveNodes, localNodeUrl, withPlainDatabase, type NodeAnswer, type NodeTarget } from './debug/nodes.ts';

export interface BundleNodeEntry {
  nodeId: string | null;
  url: string;
  status: 'ok' | 'unreachable';
  reason?: string;
  dir: string;
}

export interface BundleResult {
  file: string;
  fleet: boolean;
  nodes: BundleNodeEntry[];
  databaseError?: string;
}

const safeName = (text: string) => text.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 100) || 'node';
const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

export default class DebugBundle extends SvcCommand {
  static override description = 'Write a .tar.gz with versions, health, redacted config, cluster membership and recent logs of this node (--fleet: every live node)';
  static override examples = ['<%= config.bin %> debug-bundle --out /tmp/svc-debug.tar.gz', '<%= config.bin %> debug-bundle --fleet'];
  static override flags = {
    ...databaseFlag,
    fleet: Flags.boolean({ description: 'every live node of the cluster (from the nodes table; needs the database)', default: false }),
    out: Flags.string({ description: 'bundle file to write (default: svc-debug-<time>.tar.gz in the current directory)' }),
    url: Flags.string({ description: "this node's address, without --fleet (default: http://127.0.0.1:<SVC_SERVER_PORT>, else SVC_SERVER_PUBLIC_URL)", exclusive: ['fleet'] }),
    token: Flags.string({ description: 'admin token with scope cluster.read (default: SVC_BOOTSTRAP_ADMIN_TOKEN)' }),
  };

  async run(): Promise<BundleResult> {
    const { flags } = await this.parse(DebugBundle);
    const config = await adminConfig();
    const token = flags.token ?? config.secrets.bootstrapAdminToken;
    if (!token) throw new InputError(USAGE_ERROR_CODE, 'the nodes serve their debug information to the admin token: pass --token or set SVC_BOOTSTRAP_ADMIN_TOKEN');
    const dbUrl = flags['database-url'] ?? config.database.url;
    if (flags.fleet && !dbUrl) throw new InputError(USAGE_ERROR_CODE, '--fleet reads the live nodes from the orchestrator database: pass --database-url or set SVC_DATABASE_URL');
    const out = resolve(flags.out ?? `svc-debug-${new Date().toISOString().replace(/[:.]/g, '-')}.tar.gz`);

    const files = new Map<string, string>();
    let targets: NodeTarget[] = [];
    let databaseError: string | undefined;
    const cliVersions: Record<string, unknown> = { ...staticVersions() };
    if (dbUrl) {
      try {
        await withPlainDatabase(dbUrl, async (pool) => {
          Object.assign(cliVersions, await migrationLevel(pool, ORCHESTRATOR_MIGRATIONS_DIR));
          files.set('cluster/nodes.json', json({ nodes: await listClusterNodes(pool, aliveWindowMs(config.cluster.heartbeatMs)) }));
          if (flags.fleet) targets = await liveNodes(pool, config);
        });
      } catch (error) {
        if (flags.fleet) throw error;
        databaseError = messageOf(error);
      }
    }
    if (!flags.fleet) {
      const url = flags.url ?? localNodeUrl(config);
      if (!url) throw new InputError(USAGE_ERROR_CODE, "no address for this node: pass --url, or set SVC_SERVER_PORT or SVC_SERVER_PUBLIC_URL as the orchestrator's");
      targets = [{ nodeId: null, url }];
    }
    files.set('cli/config.json', json(redactConfigDeep(config)));
    files.set('cli/versions.json', json({ ...cliVersions, ...(databaseError !== undefined ? { databaseError } : {}) }));

    const answers = await Promise.all(targets.map((t) => askNode(t, token)));
    const nodes = answers.map((answer, i) => addNode(files, answer, i));
    files.set('manifest.json', json({ createdAt: new Date().toISOString(), fleet: flags.fleet, nodes, ...(databaseError !== undefined ? { databaseError } : {}) }));
    await writeBundle(out, files);

    if (!this.jsonEnabled()) {
      for (const n of nodes) this.log(`${n.nodeId ?? n.url}  ${n.status === 'ok' ? 'collected' : `UNREACHABLE: ${n.reason}`}`);
      if (databaseError !== undefined) this.log(`database not read: ${databaseError}`);
      this.log(`wrote ${out}`);
    }
    return { file: out, fleet: flags.fleet, nodes, ...(databaseError !== undefined ? { databaseError } : {}) };
  }
}

/** Files of one node under nodes/<id>/; an unreachable node gets unreachable.json. */
function addNode(files: Map<string, string>, answer: NodeAnswer, index: number): BundleNodeEntry {
  const id = answer.ok ? answer.debug.nodeId : answer.target.nodeId;
  const dir = `nodes/${safeName(id ?? `node-${index + 1}`)}`;
  if (!answer.ok) {
    files.set(`${dir}/unreachable.json`, json({ nodeId: answer.target.nodeId, url: answer.target.url, reason: answer.reason }));
    return { nodeId: answer.target.nodeId, url: answer.target.url, status: 'unreachable', reason: answer.reason, dir };
  }
  const d = answer.debug;
  files.set(`${dir}/node.json`, json({ nodeId: d.nodeId, nodeUrl: d.nodeUrl, publicUrl: d.publicUrl, pid: d.pid, collectedAt: d.collectedAt }));
  files.set(`${dir}/versions.json`, json(d.versions));
  files.set(`${dir}/health.json`, json(d.health));
  // Redacted on the node; redacted again here in case the node runs an older build.
  files.set(`${dir}/config.json`, json(redactConfigDeep(d.config)));
  files.set(`${dir}/logs.ndjson`, d.logs.map((l) => `${l}\n`).join(''));
  return { nodeId: d.nodeId, url: answer.target.url, status: 'ok', dir };
}

async function writeBundle(out: string, files: Map<string, string>): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'svc-debug-'));
  const root = basename(out).replace(/\.tar\.gz$|\.tgz$/, '') || 'svc-debug';
  try {
    for (const [path, text] of files) {
      const file = join(work, root, path);
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, text, { mode: 0o600 });
    }
    try {
      await tar.c({ gzip: true, file: out, cwd: work, portable: true }, [root]);
    } catch (error) {
      throw new InputError('SVC_ERR_CLI_BUNDLE_WRITE', `could not write ${out}: ${messageOf(error)}`);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
