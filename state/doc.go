// Package state is the overview of what a run needs beyond its process:
// its event log, its pause checkpoint, the control messages that reach
// it, the deployed chains, the thread leases and the replicas' health.
// Each lives in a package of its own behind a small interface with an
// embedded implementation (one machine: in-process, or bbolt under
// --data) and a Redis one (a fleet: the same binary N times on one Redis).
// There is no home-made consensus: leases with TTLs and renewal, streams,
// pub/sub, and Lua scripts that check and write in one step.
//
//	state/redisconn   the fleet's Redis: URL (?prefix=), context deadlines on, waiting at start, persistence report
//	state/lease       leases with renewal, loss detection and fencing tokens (sessions' thread leases)
//	state/eventlog    each run's events with ids, bounded, followed from any replica; the fleet's runs listing
//	state/runrecord   each run's record (LLM attempts as streamed, tool results, memory, resumes) for replay and fork
//	state/control     cancel, answers and resumes to the replica that owns a run, one reply for the caller
//	state/checkpoint  paused runs as checkpoints any replica can claim (once) and resume; the State a resume needs
//	state/chainsync   a versioned chain store (the folder; Redis) and the Syncer that applies it on every replica
//	state/health      liveness and readiness, Links that count consumption gaps, the replica registry
//	state/tasks       MCP tasks (the tasks extension): status, questions and result, read on any replica
//
// # Redis keys
//
// Under the prefix (ruleagent: unless the URL says ?prefix=NAME:). A run's
// and a checkpoint's keys carry the run id in braces, so that a Redis
// Cluster puts them in one slot; the indexes (runs, checkpoints, replicas,
// sessions) and the chain store are single keys, so one Redis (or a
// primary with replicas) serves a fleet, and going beyond one means
// sharding by prefix (a fleet per prefix) rather than a Cluster.
//
//	session:ID, sessions, lock:ID, lock:lease:fence   sessions (conversation history, thread leases)
//	run:{ID}, run:{ID}:log, runs, runs:live          eventlog
//	record:{ID}, record:{ID}:meta, records           runrecord
//	checkpoint:{ID}, checkpoints                     checkpoint
//	control:REPLICA                                  control (pub/sub channels)
//	chains, chains:rev, chains:changes               chainsync
//	replica:ID, replicas                             health
//	task:{ID}                                        tasks (MCP tasks, expiring with the task)
//	usage:rec:DAY, usage:day:DAY:DIM:ID, usage:applied  ledger (usage records, daily totals, writers' last batches)
//
// # Integration plan (issue 22), for server/ and cmd/ruleagent
//
// Open once at start: redisconn.Open(ctx, url, {Wait, OnWait: log "waiting
// for Redis"}) and warn when Persistence().Durable() is false; or, on one
// machine, one bbolt file DATA/state.db (InitialMmapSize 64 MiB) shared by
// eventlog.NewBolt and checkpoint.NewBolt. A replica id from
// health.NewReplicaID; registry.Join at start, Leave at the end.
//
//   - A chain PUT on A never reached B: server/api_chains.go PUT and DELETE
//     validate as today, then chainsync Store.Put/Delete with the version
//     the editor read (409 on ErrConflict); Store.deploy/undeploy become the
//     Syncer's Applier (Apply, Remove), run by a Syncer on every replica.
//     In a fleet the folder seeds the store at start (chainsync.Seed) and is
//     not watched; on one machine chainsync.Folder replaces the folder watch
//     (server/watch.go, store_files.go) or stays beside it.
//   - Cancel through B answered 404: the cancel route asks the local
//     registry first (server/runs), then eventlog Meta(runID).Owner and
//     control Send(owner, {Kind: cancel}); every replica Handles cancel with
//     Registry.Cancel. ErrUnreachable: the owner died; end its run as below.
//   - An approval raised on A could not be answered on B, and the thread
//     stayed locked: at the pause (server/interrupts.go, run_state.go
//     pauseLocked) build a checkpoint.State and Save it held by this
//     replica, SetStatus(waiting) in the event log. An answer on any replica
//     (server/resume.go resumeAnswers) finds the run by id, or by thread
//     (eventlog List{ThreadID, Live}, status waiting); if the owner is
//     alive, control Send(owner, {Kind: resume, Body: entries}) and the
//     request follows the run's log from its last id for its stream; if not
//     (ErrUnreachable, or the holder released it), checkpoint Claim
//     (ErrClaimed: 409), decode the State, resume from it and Continue the
//     event log. The "always" approvals travel in State.Always.
//   - No route rejoined a stream: the run's sink (runs.Run.Emit or the
//     segment's stream in run_state.go) appends each encoded event to its
//     eventlog Writer and hands the id to the SSE writers for their `id:`
//     lines (events.Event needs a field for it, or the writer takes it
//     beside the event); GET /api/v1/runs/{id}/events follows the log from
//     Last-Event-ID or ?after=; re-posting a run id that exists (Start:
//     ErrExists) rejoins it; the runs listing is eventlog List. The Writer
//     is Ended with the outcome after the terminal event.
//   - kill -9 of a replica: its threads are free within 6 s (lease TTL);
//     a janitor on every replica lists live runs (eventlog List{Live})
//     whose owner is not alive (registry Alive), takes each with
//     Continue(from: dead owner), appends one RUN_ERROR (code replica_lost)
//     and Ends it, so that a rejoining client gets one terminal event;
//     their checkpoints, if any, stay claimable.
//   - A frozen Redis left 31 s locks: done in sessions (6 s leases, lost at
//     4.5 s without renewal, fenced writes). components/agent_node.go should
//     cancel the run when Conversation.Lost is closed (a typed error, code
//     session_lost) instead of finding out at its write.
//   - /healthz said ok while Redis was down; start-up exited: /healthz is
//     health.Model.Live, /readyz Model.Ready with the probes of the
//     registry, the control bus, the event log (Redis.Probes), the Syncer
//     and a Redis ping; start-up waits (redisconn Options.Wait) and says
//     so; a Redis without persistence is logged at start.
//   - SIGTERM held 30 s for a pending approval, then lost it: Model.Drain and
//     registry SetDraining (the load balancer stops sending work), runs in
//     flight finish within --grace, paused runs Release their checkpoint to
//     the fleet at once (embedded: the checkpoint stays in state.db and the
//     next process claims it).
//   - MCP tasks: a task is a run: tasks/get is eventlog Meta, its result the
//     log followed to its end, tasks/cancel a control cancel; all from any
//     replica.
//
// The embedded stores keep the same promises on one machine, and a
// restart is a fleet of one whose previous replica died: its checkpoints
// are claimable and its runs that did not end are ended by the janitor.
package state
