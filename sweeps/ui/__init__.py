"""`sweep ui`: the saved views of a sweep's experiment, the pages that open them, the local MLflow server."""
