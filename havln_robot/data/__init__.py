"""HA-VLN data: the registry of public files (:mod:`.registry`) and ``havln-robot data fetch|check`` (:mod:`.fetch`)."""
