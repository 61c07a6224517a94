"""statistics"""
