"""A study's data: a sweep's runs read from MLflow, recorded specs and verdicts, results files, synthetic stores."""
