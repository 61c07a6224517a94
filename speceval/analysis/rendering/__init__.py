"""rendering"""
