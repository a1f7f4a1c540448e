"""boto3 clients for the actions, configured the standard way (credentials chain, AWS_REGION,
AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_<SERVICE> for compatible endpoints)."""

from __future__ import annotations

import os


def client(service: str):
    try:
        import boto3
    except ImportError:
        raise ImportError(f"the {service} action needs boto3: pip install 'smdebug-rules[aws]'") from None
    from botocore.config import Config

    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    # Message actions subscribe when a rule is built: an unreachable endpoint must cost seconds there,
    # not botocore's default minute per connection attempt.
    return boto3.client(service, region_name=region, config=Config(connect_timeout=5, read_timeout=30))
