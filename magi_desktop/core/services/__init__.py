"""The services ``Memory`` composes (issue 18): one module per domain, each constructed with what it needs
(the :class:`~magi_desktop.core.store.Database`, the entity linker, the normaliser, the embedder, another
service) and testable alone. ``Memory`` holds one of each as an attribute and its documented flat methods
delegate to them:

=====================  ==============  ==========================================================
``Memory`` attribute   class           what it does
(= its module)
=====================  ==============  ==========================================================
``ingestion``          Ingestion       ingest(), ingest_many(), ingest_turn(): payloads stored
``sessions``           Sessions        the working memory of live sessions, their goal and end
``fact_book``          FactBook        remember(), facts saved, merged, deleted, extracted
``belief_review``      BeliefReview    beliefs, the user's confirm/deny/correct/undo, entities,
                                       aliases, merges
``search_index``       SearchIndex     reindex(): the full-text index rebuilt, vectors redone
``statistics``         Statistics      stats() and activity by day
``storage``            Storage         backups, restore, whether the memory can write
``collector_state``    CollectorState  collectors' cursors and statuses
``agents``             AgentDesk       agents' usage, the user's snapshot, recent summaries
``transfer``           Transfer        export (JSON Lines, Markdown) and import
``forgetting``         Forgetting      forget() as a resumable job, receipts, the scrub
``redactor``           Redactor        re-redaction of what is stored, its receipts
``processing``         Processing      the background queues: process_pending, what is left
``periodic``           PeriodicJobs    run_due: maintenance, L3 windows, the daily backup
=====================  ==============  ==========================================================

``normalizer.Normalizer`` is the one collaborator several share: it turns a payload into a stored event
with the memory's dedupe secret (which an import replaces) and redaction rules.
"""
