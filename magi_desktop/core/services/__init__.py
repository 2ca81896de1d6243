"""The services ``Memory`` composes (issue 18): one module per domain, each constructed with what it needs
(the :class:`~magi_desktop.core.store.Database`, the entity linker, the normaliser, the embedder, another
service) and testable alone. ``Memory`` holds one of each as an attribute and its documented flat methods
delegate to them:

=====================  =======================  ====================================================
``Memory`` attribute   class (module)           what it does
=====================  =======================  ====================================================
``ingestion``          Ingestion (ingestion)    ingest(), ingest_many(), ingest_turn(): payloads stored
``sessions``           Sessions (sessions)      the working memory of live sessions, their goal and end
``fact_book``          FactBook (facts)         remember(), facts saved, merged, deleted, extracted
``belief_review``      BeliefReview (review)    beliefs, the user's confirm/deny/correct/undo,
                                                entities, aliases, merges
``search_index``       SearchIndex (indexing)   reindex(): the full-text index rebuilt, vectors redone
``statistics``         Statistics (statistics)  stats() and activity by day
``storage``            Storage (backup)         backups, restore, whether the memory can write
``collector_state``    CollectorState           collectors' cursors and statuses
                       (collectors)
``agents``             AgentDesk (agents)       agents' usage, the user's snapshot, recent summaries
``transfer``           Transfer (transfer)      export (JSON Lines, Markdown) and import
``forgetting``         Forgetting (forgetting)  forget() as a resumable job, receipts, the scrub
``redactor``           Redactor (redaction)     re-redaction of what is stored, its receipts
``processing``         Processing (processing)  the background queues: process_pending, what is left
``periodic``           PeriodicJobs (periodic)  run_due: maintenance, L3 windows, the daily backup
=====================  =======================  ====================================================

``normalizer.Normalizer`` is the one collaborator several share: it turns a payload into a stored event
with the memory's dedupe secret (which an import replaces) and redaction rules.
"""
