// Execution sandbox extension point (spec "What the service does": container, bare-metal,
// firecracker). Customer code runs in a child process the sandbox spawns, never in the agent.
// Commands are argument arrays: nothing goes through a shell string.
import type { Readable, Writable } from 'node:stream';
import { createExtensionPointRef, type PluginInstance } from './ref.ts';

export type SandboxAvailability =
  | { available: true }
  /** `missing` names the runtime that is absent (`podman`, `firecracker`, `/dev/kvm`). */
  | { available: false; missing: string; message: string };

export interface Workspace {
  /** Directory the job's files live in, as seen by processes inside the sandbox. */
  dir: string;
  /** Scratch directory for the job (TMPDIR inside the sandbox), removed on release. */
  tmpDir?: string;
}

export interface PrepareWorkspaceRequest {
  jobId: string;
  /** Files to place in the workspace (host paths, e.g. an unpacked source tarball). */
  sourceDir?: string;
}

export interface SpawnRequest {
  workspace: Workspace;
  /** argv[0] is the program; never interpreted by a shell. */
  argv: readonly string[];
  /** The complete environment: nothing is inherited that is not named here. */
  env: Readonly<Record<string, string>>;
  /** Working directory inside the workspace. */
  cwd: string;
  /** Open an IPC channel (the step runner protocol). */
  ipc?: boolean;
  /** Container image (the job's `container.image`); sandboxes without images ignore it. */
  image?: string;
  /**
   * The job's `container.options` as written in the lock; the container sandbox honours the subset
   * core/container-options.ts parses and refuses the rest. Sandboxes without images ignore it.
   */
  containerOptions?: readonly string[];
  /**
   * Host paths the process must read (the Node binary, the step runner's code). Sandboxes that
   * do not see the host file system (containers, VMs) make them available read-only at the
   * same path.
   */
  readPaths?: readonly string[];
}

export interface SandboxExit {
  code: number | null;
  signal: string | null;
}

export interface SandboxProcess {
  readonly pid: number | undefined;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly stdin: Writable | null;
  readonly exited: Promise<SandboxExit>;
  /** Present when spawned with `ipc: true`. */
  send?(message: unknown): void;
  onMessage?(listener: (message: unknown) => void): void;
}

export interface SandboxExtensionPoint extends PluginInstance {
  available(): Promise<SandboxAvailability>;
  prepareWorkspace(request: PrepareWorkspaceRequest): Promise<Workspace>;
  spawn(request: SpawnRequest): Promise<SandboxProcess>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process (and its children) exited. */
  kill(process: SandboxProcess, options: { graceMs: number }): Promise<SandboxExit>;
  /** Remove the workspace and anything the sandbox made for it. */
  releaseWorkspace(workspace: Workspace): Promise<void>;
}

export const sandboxExtensionPoint = createExtensionPointRef<SandboxExtensionPoint>()({
  id: 'sandboxes',
  kind: 'sandbox',
  members: {
    available: 'function',
    prepareWorkspace: 'function',
    spawn: 'function',
    kill: 'function',
    releaseWorkspace: 'function',
  },
});
