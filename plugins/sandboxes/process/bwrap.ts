// bubblewrap argv for a confined process job: the host file system read-only, the job's
// workspace and scratch directory writable, fresh namespaces (network kept only when asked),
// and the sandbox dies with the agent. Descriptors (the IPC channel) are inherited as they are.
export interface BwrapOptions {
  bwrap: string;
  workspace: string;
  tmpDir: string;
  /** Keep the host network (package installs, git); off isolates the job from the network. */
  network: boolean;
  cwd: string;
  argv: readonly string[];
  /**
   * Paths the job must still read (the Node binary, the runner's package). Re-bound read-only
   * after the fresh /tmp, which would otherwise hide a checkout that lives under /tmp.
   */
  readPaths?: readonly string[];
}

export function bwrapArgv(options: BwrapOptions): string[] {
  return [
    options.bwrap,
    '--ro-bind', '/', '/',
    '--dev', '/dev',
    '--proc', '/proc',
    '--tmpfs', '/tmp',
    ...(options.readPaths ?? []).flatMap((p) => ['--ro-bind-try', p, p]),
    '--bind', options.tmpDir, options.tmpDir,
    '--bind', options.workspace, options.workspace,
    '--unshare-all',
    ...(options.network ? ['--share-net'] : []),
    '--die-with-parent',
    '--chdir', options.cwd,
    '--',
    ...options.argv,
  ];
}
