"""boto3 clients for the actions, configured the standard way (credentials chain, AWS_REGION,
AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_<SERVICE> for compatible endpoints)."""

from __future__ import annotations

import os


def client(service: str):
    try:
        import boto3
    except ImportError:
        raise ImportError(f"the {service} action needs boto3: pip install 'smdebug-rules[aws]'") from None
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    return boto3.client(service, region_name=region)
