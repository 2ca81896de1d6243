-- The L3 recall filter (store/summaries.py ``recall_filter``) asks for the summaries whose window ends inside
-- the question's: with no index on window_end every ranking read every summary, and a memory summarises ~4% as
-- many windows and conversations as it holds events (40k summaries at 1M events: the summaries' exact vector
-- scan alone ~30 ms a question). With it, a question reads the summaries of its window.
CREATE INDEX l3_summaries_window_end ON l3_summaries (window_end, window_start);
