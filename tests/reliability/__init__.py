"""The reliability and security suite (issue 10): property-based fuzzing of every entry point, and privacy."""
